//! The `.npz` reader (`import::npz`) on archives of every shape a writer
//! makes: stored and deflated members, ZIP64 records, repeated names,
//! damaged and arbitrary bytes, and Python's own zipfile.

mod common;

use common::npz_writer::{Method, NpzWriter};
use ginex::internals::import::npz::NpzArchive;
use proptest::prelude::*;

fn npy_i64(values: &[i64]) -> Vec<u8> {
    let dict = format!(
        "{{'descr': '<i8', 'fortran_order': False, 'shape': ({},), }}",
        values.len()
    );
    let mut h = format!("{dict:<117}\n").into_bytes();
    let mut b = b"\x93NUMPY\x01\x00".to_vec();
    b.extend((h.len() as u16).to_le_bytes());
    b.append(&mut h);
    b.extend(values.iter().flat_map(|v| v.to_le_bytes()));
    b
}

#[test]
fn stored_deflated_and_zip64_members_read_back() {
    let dir = tempfile::tempdir().unwrap();
    for zip64 in [false, true] {
        let p = dir.path().join(format!("a{zip64}.npz"));
        let mut w = NpzWriter::create(&p, zip64).unwrap();
        w.add("x.npy", &npy_i64(&[1, 2, 3]), Method::Stored)
            .unwrap();
        w.add("y.npy", &npy_i64(&[-7; 1000]), Method::Deflate)
            .unwrap();
        w.finish().unwrap();
        let a = NpzArchive::open(&p).unwrap();
        assert_eq!(a.members().len(), 2);
        let x = a.array("x", dir.path()).unwrap();
        assert_eq!((x.int_at(0), x.int_at(2), x.len()), (Some(1), Some(3), 3));
        let y = a.array("y.npy", &dir.path().join("s")).unwrap();
        assert_eq!((y.int_at(999), y.len()), (Some(-7), 1000));
        assert!(a
            .array("z", dir.path())
            .unwrap_err()
            .to_string()
            .contains("no member"));
    }
}

#[test]
fn damaged_archives_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.npz");
    let mut w = NpzWriter::create(&p, true).unwrap();
    w.add("y.npy", &npy_i64(&[5; 1000]), Method::Deflate)
        .unwrap();
    w.finish().unwrap();
    let good = std::fs::read(&p).unwrap();
    // Truncated: the end record is gone.
    std::fs::write(&p, &good[..good.len() / 2]).unwrap();
    let e = NpzArchive::open(&p).err().unwrap().to_string();
    assert!(
        e.contains("a.npz") && e.contains("end-of-central-directory"),
        "{e}"
    );
    // A flipped byte in the deflate stream.
    let mut bad = good.clone();
    bad[120] ^= 0x55;
    std::fs::write(&p, &bad).unwrap();
    let e = NpzArchive::open(&p)
        .and_then(|a| a.array("y", dir.path()).map(|_| ()))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("a.npz")
            && (e.contains("CRC") || e.contains("deflate") || e.contains("inflates")),
        "{e}"
    );
}

#[test]
fn repeated_member_names_are_refused_and_exact_names_win() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("dup.npz");
    let mut w = NpzWriter::create(&p, false).unwrap();
    w.add("x.npy", &npy_i64(&[1]), Method::Stored).unwrap();
    w.add("x.npy", &npy_i64(&[2]), Method::Stored).unwrap();
    w.finish().unwrap();
    let e = NpzArchive::open(&p).err().unwrap().to_string();
    assert!(
        e.contains("dup.npz") && e.contains("entry 1 repeats the member name \"x.npy\""),
        "{e}"
    );
    // "x" and "x.npy" differ: asking for either name gets that member,
    // whichever order they were written in.
    for order in [["x", "x.npy"], ["x.npy", "x"]] {
        let p = dir.path().join(format!("{}.npz", order[0]));
        let mut w = NpzWriter::create(&p, false).unwrap();
        for (k, name) in order.iter().enumerate() {
            w.add(name, &npy_i64(&[k as i64]), Method::Stored).unwrap();
        }
        w.finish().unwrap();
        let a = NpzArchive::open(&p).unwrap();
        for (k, name) in order.iter().enumerate() {
            let x = a.array(name, dir.path()).unwrap();
            assert_eq!(x.int_at(0), Some(k as i128), "{order:?} {name}");
        }
    }
}

/// An independent writer: Python's zipfile (standard library, no
/// numpy), with ZIP64 forced and both methods. Skipped without python3.
#[test]
fn reads_archives_written_by_python_zipfile() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("py.npz");
    std::fs::write(dir.path().join("x.npy"), npy_i64(&[4, 5, 6])).unwrap();
    let script = format!(
        "import zipfile\nz = zipfile.ZipFile({p:?}, 'w')\nd = open({x:?}, 'rb').read()\n\
         for name, m in [('a.npy', zipfile.ZIP_STORED), ('b.npy', zipfile.ZIP_DEFLATED)]:\n\
         \tzi = zipfile.ZipInfo(name); zi.compress_type = m\n\
         \twith z.open(zi, 'w', force_zip64=True) as f: f.write(d)\n\
         z.writestr('c.npy', d, compress_type=zipfile.ZIP_DEFLATED)\nz.close()\n",
        p = p.to_str().unwrap(),
        x = dir.path().join("x.npy").to_str().unwrap()
    );
    let Ok(status) = std::process::Command::new("python3")
        .args(["-c", &script])
        .status()
    else {
        return;
    };
    assert!(status.success());
    let a = NpzArchive::open(&p).unwrap();
    for name in ["a", "b", "c"] {
        let x = a.array(name, dir.path()).unwrap();
        assert_eq!(
            (x.int_at(0), x.int_at(2), x.len()),
            (Some(4), Some(6), 3),
            "{name}"
        );
    }
}

proptest! {
    #[test]
    fn any_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400), cut in 0usize..400) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.npz");
        std::fs::write(&p, &bytes).unwrap();
        let _ = NpzArchive::open(&p);
        // A valid archive with a random region overwritten.
        let mut w = NpzWriter::create(&p, cut % 2 == 0).unwrap();
        w.add("x.npy", &npy_i64(&[1, 2]), Method::Stored).unwrap();
        w.finish().unwrap();
        let mut good = std::fs::read(&p).unwrap();
        let at = cut % good.len();
        for (i, b) in bytes.iter().take(8).enumerate() {
            if let Some(g) = good.get_mut(at + i) { *g = *b; }
        }
        std::fs::write(&p, &good).unwrap();
        if let Ok(a) = NpzArchive::open(&p) {
            let _ = a.array("x", dir.path());
        }
    }
}
