//! `ginex-import convert`: a store's features re-encoded in another dtype,
//! the rest copied; the same store `ginex gen --dtype` writes; refusals
//! leave nothing behind.

#[path = "../../tests/common/mod.rs"]
mod common;

use clap::Parser;
use ginex::{Dtype, Store};
use ginex_cli::commands::{run as ginex_run, GinexCli};

use common::p;

#[path = "tools_common/mod.rs"]
mod tools_common;
use tools_common::{run_dump, run_import};

fn gen(dtype: &str, out: &std::path::Path) {
    let args = [
        "ginex",
        "gen",
        "--quiet",
        "--nodes",
        "1500",
        "--dim",
        "20",
        "--classes",
        "3",
        "--dtype",
        dtype,
        "--out",
        p(out),
    ];
    let mut sink = Vec::new();
    ginex_run(GinexCli::try_parse_from(args).unwrap(), &mut sink).unwrap();
}

fn rows(store: &Store) -> Vec<f32> {
    let ids: Vec<u64> = (0..store.feature_rows()).collect();
    let mut out = vec![0f32; ids.len() * store.feature_dim() as usize];
    store.read_feature_rows_f32(&ids, &mut out).unwrap();
    out
}

#[test]
fn convert_writes_the_store_gen_writes_in_that_dtype() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for dtype in ["f32", "f16", "q8"] {
        gen(dtype, &d.join(format!("gen-{dtype}")));
    }
    // f32 -> q8 and f32 -> f16: byte for byte what gen writes.
    for dtype in ["q8", "f16"] {
        let out = d.join(format!("conv-{dtype}"));
        let report = run_import(&[
            "convert",
            p(&d.join("gen-f32")),
            "--dtype",
            dtype,
            "--quiet",
            "--out",
            p(&out),
        ])
        .unwrap();
        assert!(report.contains("verified"), "{report}");
        common::assert_same_files(&d.join(format!("gen-{dtype}")), &out, dtype);
    }
    // q8 -> f32 gives the decoded values; f16 -> bf16 -> f16 round trips
    // values f16 holds only where bf16 holds them too, so compare to f32.
    let back = d.join("q8-f32");
    run_import(&[
        "convert",
        p(&d.join("conv-q8")),
        "--dtype",
        "f32",
        "--quiet",
        "--out",
        p(&back),
    ])
    .unwrap();
    let (q8, f32s) = (
        Store::open(d.join("conv-q8")).unwrap(),
        Store::open(&back).unwrap(),
    );
    assert_eq!((f32s.dtype(), f32s.q8_error()), (Dtype::F32, None));
    assert_eq!(rows(&q8), rows(&f32s));
    assert_eq!(q8.indptr(), f32s.indptr());
    assert_eq!(q8.labels().unwrap(), f32s.labels().unwrap());
    let dump = run_dump(&[p(&d.join("conv-q8"))]);
    assert!(dump.contains("dim 20 q8 (28 bytes/row"), "{dump}");
    assert!(
        dump.contains("q8 error") && dump.contains("measured on 1500 of 1500 rows"),
        "{dump}"
    );
}

#[test]
fn convert_refuses_an_existing_target_and_the_same_dtype() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let src = d.join("s");
    gen("f32", &src);
    let taken = d.join("taken");
    std::fs::create_dir(&taken).unwrap();
    let err = run_import(&["convert", p(&src), "--dtype", "q8", "--out", p(&taken)]).unwrap_err();
    assert!(err.to_string().contains("already exists"), "{err}");
    assert_eq!(
        std::fs::read_dir(&taken).unwrap().count(),
        0,
        "nothing written into it"
    );
    let out = d.join("same");
    let err = run_import(&["convert", p(&src), "--dtype", "f32", "--out", p(&out)]).unwrap_err();
    assert!(err.to_string().contains("f32 already"), "{err}");
    assert!(!out.exists());
    assert!(common::leftovers(d).is_empty());
}

#[test]
fn convert_refuses_values_the_target_dtype_cannot_hold() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let edges = d.join("e.txt");
    std::fs::write(&edges, "0 1\n1 2\n2 0\n").unwrap();
    let feats = d.join("f.npy");
    for (i, (values, dtype, want)) in [
        (
            [1.0f32, 2.0, 3.0, 70000.0, 5.0, 6.0],
            "f16",
            "feature row 1 column 1 is 70000, which overflows f16",
        ),
        (
            [1.0, 2.0, 3.0, 4.0, 5.0, f32::NAN],
            "q8",
            "feature row 2 column 1 is NaN",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let bytes: Vec<u8> = values.iter().flat_map(|x| x.to_le_bytes()).collect();
        std::fs::write(&feats, common::npy_bytes("<f4", "(3, 2)", &bytes)).unwrap();
        let src = d.join(format!("s{i}"));
        run_import(&[
            "files",
            "--quiet",
            "--edges",
            p(&edges),
            "--features",
            p(&feats),
            "--allow-nonfinite",
            "--out",
            p(&src),
        ])
        .unwrap();
        let out = d.join(dtype);
        let err =
            run_import(&["convert", p(&src), "--dtype", dtype, "--out", p(&out)]).unwrap_err();
        assert!(err.to_string().contains(want), "{err}");
        assert!(!out.exists(), "{dtype}: nothing at the target");
    }
    assert!(common::leftovers(d).is_empty());
}
