//! `ginex-dump STORE`: counts, dtype, sizes, degree statistics and files.

use std::io::Write;

use ginex::internals::store::Store;

pub(super) fn degree_stats(indptr: &[u64]) -> (u64, f64, u64, u64, u64) {
    let mut deg: Vec<u64> = indptr.windows(2).map(|w| w[1] - w[0]).collect();
    if deg.is_empty() {
        return (0, 0.0, 0, 0, 0);
    }
    deg.sort_unstable();
    let pct = |q: f64| deg[((deg.len() - 1) as f64 * q).round() as usize];
    let mean = deg.iter().sum::<u64>() as f64 / deg.len() as f64;
    (deg[0], mean, pct(0.5), pct(0.99), deg[deg.len() - 1])
}

/// The node types (ids, features) and relations (edges) of a typed store.
fn print_schema(
    schema: &ginex::internals::format::schema::Schema,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    writeln!(out, "  node types      {}", schema.node_types.len())?;
    for t in &schema.node_types {
        let features = match t.layout() {
            Some(l) => format!("features dim {} {}", l.dim, l.dtype.name()),
            None => "no features".to_string(),
        };
        writeln!(
            out,
            "    {:<16} {:>12} nodes  ids {}..{}  {features}",
            t.name,
            t.count,
            t.offset,
            t.offset + t.count
        )?;
    }
    writeln!(out, "  relations       {}", schema.relations.len())?;
    for r in &schema.relations {
        writeln!(
            out,
            "    {:<40} {:>12} edges",
            schema.canonical(r),
            r.num_edges
        )?;
    }
    Ok(())
}

/// The edge splits' counts: positives and negatives per split.
fn print_edge_splits(
    s: &ginex::internals::format::edge_splits::EdgeSplits,
    schema: Option<&ginex::internals::format::schema::Schema>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let one = |s: &ginex::internals::format::edge_splits::EdgeSplit| match s.k() {
        0 => format!("{} (no negatives)", s.len()),
        k => format!("{} ({k} negatives each)", s.len()),
    };
    let train = s
        .train
        .as_ref()
        .map_or_else(|| "every CSC edge".to_string(), &one);
    let of = s.relation.map_or(String::new(), |r| {
        format!(" of {}", super::docs::relation_name(schema, r))
    });
    writeln!(
        out,
        "  edge splits     {}{of}; train {train}, valid {}, test {}",
        if s.undirected {
            "undirected pairs"
        } else {
            "directed edges"
        },
        one(&s.valid),
        one(&s.test)
    )
}

/// How local the node order is, on sampled batches
/// ([`ginex::internals::import::locality::scatter`]); where it is no
/// better than random ids, what `--reorder auto` would decide, with the
/// hint when a reorder pays. Nothing for stores too small to matter,
/// typed stores and rows of a page or more.
fn print_layout(
    store: &Store,
    sample: &ginex::internals::import::locality::Sample,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    use ginex::internals::import::locality::{decide, scatter, AUTO_MIN_PAGES};
    let Ok(pages) = store.layout().num_pages(store.feature_rows()) else {
        return Ok(());
    };
    if pages < AUTO_MIN_PAGES {
        return Ok(());
    }
    let s = match scatter(store, sample) {
        Ok(Some(s)) => s,
        Ok(None) => return Ok(()),
        Err(e) => return writeln!(out, "  layout          not measured: {e}"),
    };
    writeln!(
        out,
        "  layout          {:.0} pages/batch for {:.0} rows, {:.2}x random placement's {:.0} ({})",
        s.pages_per_batch,
        s.rows_per_batch,
        s.ratio(),
        s.random_pages_per_batch,
        sample.describe(s.batches)
    )?;
    if !s.is_scattered(pages) {
        return Ok(());
    }
    match decide(store, sample, AUTO_MIN_PAGES) {
        Ok((d, _)) => {
            writeln!(out, "  layout {d}")?;
            if let Some(hint) = d.hint(store.dir()) {
                writeln!(out, "  hint: {hint}")?;
            }
            Ok(())
        }
        Err(e) => writeln!(out, "  layout          reorder not measured: {e}"),
    }
}

pub(super) fn print_summary(
    store: &Store,
    sample: &ginex::internals::import::locality::Sample,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let m = store.manifest();
    writeln!(out, "store {}", store.dir().display())?;
    let format = match store.schema() {
        Some(schema) => format!("v{} (typed)", schema.written_version()),
        None => format!(
            "v{}",
            ginex::internals::format::header::FileKind::Manifest.written_version()
        ),
    };
    writeln!(out, "  format          {format}")?;
    writeln!(out, "  nodes           {}", m.num_nodes)?;
    writeln!(out, "  edges           {}", m.num_edges)?;
    let sections = store.feature_sections();
    let packing = match m.layout.rows_per_page() {
        // Rows read in the row format above, stored per type.
        _ if !sections.is_uniform() => format!(
            "{} sections of {} pages, each type in its own layout",
            sections.sections().len(),
            sections.num_pages()
        ),
        0 => format!(
            "a row spans {} pages, starting on a page boundary",
            m.layout.pages_per_row()
        ),
        n => format!("{n} rows/page"),
    };
    writeln!(
        out,
        "  features        dim {} {} ({} bytes/row, {packing})",
        m.layout.dim,
        m.layout.dtype.name(),
        m.layout.row_bytes(),
    )?;
    if let Some(e) = store.q8_error() {
        writeln!(
            out,
            "  q8 error        max {:.3e} mean {:.3e} abs; {:.3e} and {:.3e} of the feature range [{}, {}] (lossy; measured on {} of {} rows)",
            e.max_abs,
            e.mean_abs(),
            e.relative(e.max_abs),
            e.relative(e.mean_abs()),
            e.low,
            e.high,
            e.rows,
            store.feature_rows()
        )?;
    }
    if let Some(schema) = store.schema() {
        print_schema(schema, out)?;
    }
    if let Ok(Some(ids)) = store.original_ids() {
        let shown: Vec<String> = ids.iter().take(5).map(u64::to_string).collect();
        writeln!(
            out,
            "  original ids    {} ({}{}; ginex-dump --json lists them)",
            ids.len(),
            shown.join(", "),
            if ids.len() > 5 { ", …" } else { "" }
        )?;
    }
    writeln!(out, "  index width     {} bytes", m.index_width.bytes())?;
    let (min, mean, p50, p99, max) = degree_stats(store.indptr());
    writeln!(
        out,
        "  in-degree       min {min} mean {mean:.2} p50 {p50} p99 {p99} max {max}"
    )?;
    writeln!(out, "  segments        {}", store.segments().len())?;
    print_layout(store, sample, out)?;
    if let Ok(Some(labels)) = store.labels() {
        let missing = labels.iter().filter(|&&l| l < 0).count();
        writeln!(
            out,
            "  labels          {} classes, {missing} nodes without a label",
            m.num_classes
        )?;
    }
    if let Ok(Some(s)) = store.splits() {
        writeln!(
            out,
            "  splits          train {} valid {} test {}",
            s.train.len(),
            s.valid.len(),
            s.test.len()
        )?;
    }
    if let Ok(Some(s)) = store.edge_splits() {
        print_edge_splits(&s, store.schema(), out)?;
    }
    writeln!(out, "  files")?;
    let mut total = 0;
    for f in &m.files {
        total += f.len;
        writeln!(
            out,
            "    {:<16} {:<15} {:>14} bytes  crc {:#010x}",
            f.name(),
            f.kind.name(),
            f.len,
            f.payload_crc
        )?;
    }
    writeln!(out, "  total           {total} bytes")
}
