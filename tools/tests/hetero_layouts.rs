//! Typed stores whose node types have features of their own dimension and
//! dtype (format/features.md, "Sections"): the chunked importer keeps each
//! type's layout, readers return rows widened to the row format, every
//! policy gathers the same batches, exports write each type in its own
//! layout and re-import byte-identically, and R-GCN trains on it.

#[path = "../../tests/common/mod.rs"]
mod common;
mod tools_common;

use std::path::{Path, PathBuf};

use ginex::internals::cache::Policy;
use ginex::internals::exec::epoch::run_epoch;
use ginex::internals::format::header::FileHeader;
use ginex::internals::format::pages::Dtype;
use ginex::internals::format::version::V1_5;
use ginex::Store;

use common::{assert_same_files, f32_bytes, i64_bytes, npy_bytes, p};
use tools_common::{run_dump, run_export, run_import, run_printed_reimport};

/// Author `a` has 4 features `[a, a + 0.25, -a, 1]` (stored f32), paper
/// `q` 6 features `[q/2, j]` for column `j` > 0 (stored f16, exact),
/// institution `i` 3 features `[i, -2i, 8]` (stored bf16, exact).
fn author_row(a: usize) -> Vec<f32> {
    let a = a as f32;
    vec![a, a + 0.25, -a, 1.0]
}

fn paper_row(q: usize) -> Vec<f32> {
    (0..6)
        .map(|j| {
            if j == 0 {
                (q % 512) as f32 / 2.0
            } else {
                j as f32
            }
        })
        .collect()
}

fn institution_row(i: usize) -> Vec<f32> {
    let i = (i % 64) as f32;
    vec![i, -2.0 * i, 8.0]
}

/// Each node type's `(dim, dtype)`.
fn layouts(s: &Store) -> Vec<(u32, Option<Dtype>)> {
    let types = &s.schema().expect("a typed store").node_types;
    types.iter().map(|t| (t.dim, t.dtype)).collect()
}

/// Counts of the fixture's types.
#[derive(Clone, Copy)]
struct Counts {
    authors: usize,
    papers: usize,
    institutions: usize,
}

/// A chunked graph (DGL's format) with features on every type, each of
/// its own dimension; papers labelled (3 classes) and half of them in the
/// training mask. Each paper is written by two authors and cites up to
/// two earlier papers; each author is affiliated with one institution.
fn chunked(root: &Path, c: Counts) -> PathBuf {
    let d = root.join("chunked");
    std::fs::create_dir_all(&d).unwrap();
    let write = |rel: &str, bytes: Vec<u8>| std::fs::write(d.join(rel), bytes).unwrap();
    let pairs = |v: &[i64]| npy_bytes("<i8", &format!("({}, 2)", v.len() / 2), &i64_bytes(v));
    let mut writes = Vec::new();
    let mut cites = Vec::new();
    for q in 0..c.papers as i64 {
        for k in [q * 7, q * 13 + 5] {
            writes.extend([k % c.authors as i64, q]);
        }
        for back in [1, 3] {
            if q >= back {
                cites.extend([q - back, q]);
            }
        }
    }
    let affiliated: Vec<i64> = (0..c.authors as i64)
        .flat_map(|a| [a, a % c.institutions as i64])
        .collect();
    write("writes.npy", pairs(&writes));
    write("cites.npy", pairs(&cites));
    write("affiliated.npy", pairs(&affiliated));
    let feats = |n: usize, dim: usize, row: &dyn Fn(usize) -> Vec<f32>| {
        let v: Vec<f32> = (0..n).flat_map(row).collect();
        npy_bytes("<f4", &format!("({n}, {dim})"), &f32_bytes(&v))
    };
    write("author-feat.npy", feats(c.authors, 4, &author_row));
    write("paper-feat.npy", feats(c.papers, 6, &paper_row));
    write(
        "institution-feat.npy",
        feats(c.institutions, 3, &institution_row),
    );
    let labels: Vec<i64> = (0..c.papers as i64).map(|q| q % 3).collect();
    let n = c.papers;
    write(
        "paper-label.npy",
        npy_bytes("<i8", &format!("({n},)"), &i64_bytes(&labels)),
    );
    let mask: Vec<u8> = (0..n).map(|q| u8::from(q % 2 == 0)).collect();
    write(
        "paper-train.npy",
        npy_bytes("|b1", &format!("({n},)"), &mask),
    );
    let numpy = |files: &[&str]| serde_json::json!({"format": {"name": "numpy"}, "data": files});
    let meta = serde_json::json!({
        "graph_name": "layouts",
        "node_type": ["author", "paper", "institution"],
        "num_nodes_per_chunk": [[c.authors], [c.papers], [c.institutions]],
        "edge_type": ["author:writes:paper", "paper:cites:paper", "author:affiliated_with:institution"],
        "num_edges_per_chunk": [[writes.len() / 2], [cites.len() / 2], [affiliated.len() / 2]],
        "edges": {
            "author:writes:paper": numpy(&["writes.npy"]),
            "paper:cites:paper": numpy(&["cites.npy"]),
            "author:affiliated_with:institution": numpy(&["affiliated.npy"]),
        },
        "node_data": {
            "author": {"feat": numpy(&["author-feat.npy"])},
            "paper": {
                "feat": numpy(&["paper-feat.npy"]),
                "label": numpy(&["paper-label.npy"]),
                "train_mask": numpy(&["paper-train.npy"]),
            },
            "institution": {"feat": numpy(&["institution-feat.npy"])},
        },
        "edge_data": {},
    });
    write("metadata.json", serde_json::to_vec_pretty(&meta).unwrap());
    d.join("metadata.json")
}

/// The fixture imported with papers as f16 and institutions as bf16.
fn mixed_store(root: &Path, c: Counts) -> PathBuf {
    let meta = chunked(root, c);
    let out = root.join("store");
    run_import(&[
        "dgl",
        p(&meta),
        "--dtype",
        "f32,paper=f16,institution=bf16",
        "--quiet",
        "--out",
        p(&out),
    ])
    .unwrap();
    out
}

const SMALL: Counts = Counts {
    authors: 4,
    papers: 5,
    institutions: 2,
};

/// Every node's features as the readers return them: its type's values,
/// zero padded to the row format's 6 columns.
fn widened(c: Counts) -> Vec<f32> {
    let pad = |mut v: Vec<f32>| {
        v.resize(6, 0.0);
        v
    };
    (0..c.authors)
        .map(author_row)
        .chain((0..c.papers).map(paper_row))
        .chain((0..c.institutions).map(institution_row))
        .flat_map(pad)
        .collect()
}

#[test]
fn each_type_keeps_its_dimension_and_dtype_and_reads_widened() {
    let dir = tempfile::tempdir().unwrap();
    let path = mixed_store(dir.path(), SMALL);
    let s = Store::open(&path).unwrap();
    assert_eq!(
        layouts(&s),
        vec![
            (4, Some(Dtype::F32)),
            (6, Some(Dtype::F16)),
            (3, Some(Dtype::Bf16))
        ]
    );
    // The row format: the widest type, and f32 (the dtypes differ).
    assert_eq!((s.feature_dim(), s.dtype()), (6, Dtype::F32));
    // One section a type, each from a page of its own: authors 4 x 16
    // bytes in page 0, papers 5 x 12 in page 1, institutions 2 x 6 in 2.
    let sections: Vec<(u64, u64, u64)> = s
        .feature_sections()
        .sections()
        .iter()
        .map(|x| (x.first_row, x.rows, x.first_page))
        .collect();
    assert_eq!(sections, vec![(0, 4, 0), (4, 5, 1), (9, 2, 2)]);
    let pages_len = std::fs::metadata(path.join("features.pages"))
        .unwrap()
        .len();
    assert_eq!(pages_len, 4096 * 4);
    // The schema is written as 1.5, its entries carrying the dtypes.
    let head = std::fs::read(path.join("schema")).unwrap();
    let header = FileHeader::decode(&head[..64], Path::new("schema")).unwrap();
    assert_eq!(header.version, V1_5);
    // Every row, read back widened.
    let ids: Vec<u64> = (0..s.num_nodes()).rev().collect();
    let mut x = vec![0f32; ids.len() * 6];
    s.read_feature_rows_f32(&ids, &mut x).unwrap();
    let want = widened(SMALL);
    for (k, &v) in ids.iter().enumerate() {
        let v = v as usize;
        assert_eq!(x[k * 6..k * 6 + 6], want[v * 6..v * 6 + 6], "node {v}");
    }
    s.verify().unwrap();
    // ginex-dump shows each type's layout and each row in it.
    let summary = run_dump(&[p(&path)]);
    assert!(summary.contains("features dim 6 f16"), "{summary}");
    assert!(
        summary.contains("24 bytes/row, 3 sections of 3 pages, each type in its own layout"),
        "{summary}"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&run_dump(&[p(&path.join("features.pages")), "--json"])).unwrap();
    let rows = doc["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 11);
    assert_eq!(rows[1]["values"], serde_json::json!([1.0, 1.25, -1.0, 1.0]));
    assert_eq!((&rows[4]["page"], &rows[9]["page"]), (&1.into(), &2.into()));
    assert_eq!(rows[10]["values"], serde_json::json!([1.0, -2.0, 8.0]));
    // A chunked graph's type given a dtype it does not have is refused.
    let meta = dir.path().join("chunked/metadata.json");
    let err = run_import(&[
        "dgl",
        p(&meta),
        "--dtype",
        "f16,venue=f32",
        "--quiet",
        "--out",
        p(&dir.path().join("refused")),
    ])
    .unwrap_err()
    .to_string();
    assert!(err.contains("node type \"venue\""), "{err}");
    assert!(!dir.path().join("refused").exists());
}

/// The `(descr, shape)` of a `.npy` file's header.
fn npy_header(path: &Path) -> String {
    let b = std::fs::read(path).unwrap();
    String::from_utf8_lossy(&b[10..128]).into_owned()
}

#[test]
fn exports_write_each_type_in_its_own_layout_and_reimport_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let store = mixed_store(dir.path(), SMALL);
    let out = dir.path().join("exported");
    let report = run_export(&["dgl", p(&store), "--out", p(&out), "--quiet"]);
    assert!(
        report.contains("--dtype f32,paper=f16,institution=bf16"),
        "{report}"
    );
    let author = npy_header(&out.join("node_data/author/feat-0.npy"));
    assert!(
        author.contains("'<f4'") && author.contains("(4, 4)"),
        "{author}"
    );
    let paper = npy_header(&out.join("node_data/paper/feat-0.npy"));
    assert!(paper.contains("(5, 6)"), "{paper}");
    let b = std::fs::read(out.join("node_data/institution/feat-0.npy")).unwrap();
    let v: Vec<f32> = (0..2).flat_map(institution_row).collect();
    assert_eq!(b[b.len() - 24..], f32_bytes(&v)[..]);
    let rebuilt = dir.path().join("rebuilt");
    run_printed_reimport(&report, &rebuilt);
    assert_same_files(&store, &rebuilt, "mixed-layout dgl round trip");

    let gb = dir.path().join("graphbolt");
    run_export(&["graphbolt", p(&store), "--out", p(&gb), "--quiet"]);
    let author = npy_header(&gb.join("data/author-feat.npy"));
    assert!(author.contains("(4, 4)"), "{author}");
    let inst = npy_header(&gb.join("data/institution-feat.npy"));
    assert!(inst.contains("(2, 3)"), "{inst}");
}

/// Every policy gathers the same batches from a store of three layouts,
/// each row the store's (widened) row, and Belady's changesets stay
/// optimal, page companions taken from each section's own pages.
#[test]
fn every_policy_gathers_identical_batches_over_mixed_layouts() {
    let dir = tempfile::tempdir().unwrap();
    let c = Counts {
        authors: 900,
        papers: 2000,
        institutions: 40,
    };
    let store = Store::open(mixed_store(dir.path(), c)).unwrap();
    assert_eq!(store.feature_sections().sections().len(), 3);
    let want = widened(c);
    let runs = dir.path().join("runs");
    let mut seen_by = Vec::new();
    for policy in Policy::ALL {
        let cfg = common::epoch_config(policy, &runs);
        let mut seen = Vec::new();
        let r = run_epoch(&store, &cfg, &mut |b| {
            let mut x = vec![0f32; b.ids.len() * 6];
            Dtype::F32.decode_to_f32(6, b.rows, &mut x);
            for (k, &v) in b.ids.iter().enumerate() {
                let v = v as usize;
                assert_eq!(
                    x[k * 6..k * 6 + 6],
                    want[v * 6..v * 6 + 6],
                    "{policy:?} node {v}"
                );
            }
            seen.push((b.batch, b.ids.to_vec()));
            Ok(())
        })
        .unwrap();
        if policy == Policy::Ginex {
            let per_batch: Vec<u64> = r.batches.iter().map(|b| b.misses).collect();
            assert_eq!(per_batch, r.optimal_misses, "ginex is Belady-optimal");
            // Rows sharing a page of their section ride along with misses.
            assert!(r.page_companions > 0, "no page companions");
        }
        assert!(!seen.is_empty());
        seen_by.push((policy, seen));
    }
    let (_, reference) = &seen_by[0];
    for (policy, seen) in &seen_by {
        assert_eq!(seen, reference, "{policy:?} gathered other batches");
    }
}

/// R-GCN (with basis decomposition) trains on a store of three layouts
/// and predicts from its checkpoint, whose metadata rebuilds the bases.
#[cfg(feature = "train")]
#[test]
fn rgcn_trains_and_predicts_over_mixed_layouts() {
    use clap::Parser;
    use ginex_cli::commands::{run, GinexCli};
    let ginex = |args: &[&str]| {
        let cli = GinexCli::try_parse_from(std::iter::once(&"ginex").chain(args)).unwrap();
        let mut out = Vec::new();
        run(cli, &mut out).unwrap_or_else(|e| panic!("ginex {args:?}: {e}"));
        String::from_utf8(out).unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    let c = Counts {
        authors: 300,
        papers: 600,
        institutions: 20,
    };
    let store = mixed_store(dir.path(), c);
    let ckpt = dir.path().join("ckpt");
    ginex(&[
        "train",
        p(&store),
        "--model",
        "rgcn",
        "--num-bases",
        "2",
        "--fanouts",
        "4,3",
        "--batch-size",
        "50",
        "--hidden",
        "8",
        "--epochs",
        "1",
        "--eval-every",
        "0",
        "--device",
        "cpu",
        "--checkpoint",
        p(&ckpt),
        "--run-dir",
        p(&dir.path().join("runs")),
    ]);
    let logits = dir.path().join("logits.npy");
    ginex(&[
        "predict",
        p(&store),
        "--checkpoint",
        p(&ckpt),
        "--out",
        p(&logits),
        "--layerwise",
        "--device",
        "cpu",
    ]);
    let header = npy_header(&logits);
    assert!(header.contains("(920, 3)"), "{header}");
    // Basis decomposition is R-GCN's: other models refuse it.
    let cli = GinexCli::try_parse_from([
        "ginex",
        "train",
        p(&store),
        "--model",
        "rsage",
        "--num-bases",
        "2",
    ])
    .unwrap();
    let err = run(cli, &mut Vec::new()).unwrap_err().to_string();
    assert!(err.contains("--num-bases 2"), "{err}");
}

/// `ginex gen --hetero --author-dim`: authors get features of their own
/// layout beside the papers'; rows read widened, and both types carry
/// their planted class (the same generator as papers').
#[test]
fn gen_hetero_gives_authors_features_of_their_own_layout() {
    let dir = tempfile::tempdir().unwrap();
    let p = ginex::SynthParams {
        nodes: 2000,
        dim: 6,
        dtype: Dtype::F32,
        classes: 3,
        hetero: true,
        author_features: Some((3, Dtype::F16)),
        ..ginex::SynthParams::default()
    };
    let path = dir.path().join("g");
    ginex::generate_store(&p, &path, &ginex::NoProgress).unwrap();
    let s = Store::open(&path).unwrap();
    let schema = s.schema().unwrap();
    assert_eq!(
        layouts(&s),
        vec![(6, Some(Dtype::F32)), (3, Some(Dtype::F16)), (0, None)]
    );
    assert_eq!((s.feature_dim(), s.dtype()), (6, Dtype::F32));
    let authors: Vec<u64> = schema.node_types[1].ids().collect();
    let mut x = vec![0f32; authors.len() * 6];
    s.read_feature_rows_f32(&authors, &mut x).unwrap();
    for row in x.chunks_exact(6) {
        assert!(row[..3].iter().all(|v| *v != 0.0), "{row:?}");
        assert_eq!(row[3..], [0.0; 3]);
    }
    s.verify().unwrap();
    // derive-features rewrites the store: the authors' rows go back in
    // their own layout unchanged, the fields get the row format's.
    use ginex::internals::import::derive::{derive_features, DeriveOptions, Reduce};
    let derived = dir.path().join("g-f");
    derive_features(&DeriveOptions {
        store: path.clone(),
        out: derived.clone(),
        target: "field".into(),
        from: String::new(),
        via: String::new(),
        reduce: Reduce::Zero,
        memory: 1 << 20,
    })
    .unwrap();
    let d = Store::open(&derived).unwrap();
    assert_eq!(layouts(&d)[2], (6, Some(Dtype::F32)));
    assert_eq!(d.feature_sections().sections().len(), 3);
    let mut again = vec![0f32; x.len()];
    d.read_feature_rows_f32(&authors, &mut again).unwrap();
    assert_eq!(again, x);
    let before = std::fs::read(path.join("features.pages")).unwrap();
    let after = std::fs::read(derived.join("features.pages")).unwrap();
    let authors_end = 4096 * (1 + s.feature_sections().num_pages() as usize);
    assert_eq!(before.len(), authors_end);
    assert_eq!(
        after[4096..authors_end],
        before[4096..],
        "papers' and authors' pages"
    );
    d.verify().unwrap();
    // Featured authors without --hetero are refused.
    let flat = ginex::SynthParams { hetero: false, ..p };
    let err = ginex::generate_store(&flat, &dir.path().join("flat"), &ginex::NoProgress)
        .unwrap_err()
        .to_string();
    assert!(err.contains("needs --hetero"), "{err}");
}

/// A featured type without nodes, of a dimension of its own, imports: its
/// empty feature file is not held to the next type's dimension.
#[test]
fn a_featured_type_without_nodes_imports() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let write = |rel: &str, bytes: Vec<u8>| std::fs::write(d.join(rel), bytes).unwrap();
    write(
        "writes.npy",
        npy_bytes("<i8", "(2, 2)", &i64_bytes(&[0, 0, 1, 0])),
    );
    write("a.npy", npy_bytes("<f4", "(2, 2)", &f32_bytes(&[1.0; 4])));
    write("v.npy", npy_bytes("<f4", "(0, 7)", &[]));
    write("p.npy", npy_bytes("<f4", "(1, 3)", &f32_bytes(&[2.0; 3])));
    let numpy = |f: &str| serde_json::json!({"format": {"name": "numpy"}, "data": [f]});
    let meta = serde_json::json!({
        "graph_name": "empty-type",
        "node_type": ["author", "venue", "paper"],
        "num_nodes_per_chunk": [[2], [0], [1]],
        "edge_type": ["author:writes:paper"],
        "num_edges_per_chunk": [[2]],
        "edges": {"author:writes:paper": numpy("writes.npy")},
        "node_data": {
            "author": {"feat": numpy("a.npy")},
            "venue": {"feat": numpy("v.npy")},
            "paper": {"feat": numpy("p.npy")},
        },
        "edge_data": {},
    });
    write("metadata.json", serde_json::to_vec(&meta).unwrap());
    let out = d.join("store");
    run_import(&[
        "dgl",
        p(&d.join("metadata.json")),
        "--quiet",
        "--out",
        p(&out),
    ])
    .unwrap();
    let s = Store::open(&out).unwrap();
    assert_eq!(
        layouts(&s),
        vec![
            (2, Some(Dtype::F32)),
            (7, Some(Dtype::F32)),
            (3, Some(Dtype::F32))
        ]
    );
    let mut x = vec![0f32; 7];
    s.read_feature_rows_f32(&[2], &mut x).unwrap();
    assert_eq!(x, [2.0, 2.0, 2.0, 0.0, 0.0, 0.0, 0.0]);
    s.verify().unwrap();
}
