//! SVG for the benchmark plots: a tiny writer (a white canvas, axis lines,
//! text, rectangles and polylines, with a shared colour palette per policy)
//! and a line chart (miss ratio against cache size: axes, ticks, one
//! coloured polyline and legend entry per series).

/// The colour of a feature-cache policy: its row's in the policy table, the
/// same in every plot (ginex red), brown for a name not in the table.
pub fn policy_color(policy: &str) -> &'static str {
    ginex::internals::cache::Policy::parse(policy).map_or("#8c564b", |p| p.entry().color)
}

/// Horizontal text alignment.
#[derive(Debug, Clone, Copy)]
pub enum Anchor {
    /// Text starts at x.
    Start,
    /// Text is centred on x.
    Middle,
    /// Text ends at x.
    End,
}

impl Anchor {
    fn name(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// An SVG document being written.
#[derive(Debug)]
pub struct Svg {
    body: String,
}

impl Svg {
    /// A `width` × `height` white canvas (sans-serif, 12 px text).
    pub fn new(width: f64, height: f64) -> Svg {
        Svg {
            body: format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"),
        }
    }

    /// A straight line.
    pub fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, stroke: &str) {
        self.body += &format!(
            "<line x1=\"{x1:.1}\" y1=\"{y1:.1}\" x2=\"{x2:.1}\" y2=\"{y2:.1}\" stroke=\"{stroke}\"/>\n"
        );
    }

    /// The x axis along the bottom and the y axis along the left of a plot
    /// area inset by `margin` on every side.
    pub fn axes(&mut self, width: f64, height: f64, margin: f64) {
        self.line(
            margin,
            height - margin,
            width - margin,
            height - margin,
            "black",
        );
        self.line(margin, margin, margin, height - margin, "black");
    }

    /// Text at (x, y), escaped; `fill` defaults to black.
    pub fn text(&mut self, x: f64, y: f64, anchor: Anchor, fill: Option<&str>, text: &str) {
        let fill = fill.map(|c| format!(" fill=\"{c}\"")).unwrap_or_default();
        self.body += &format!(
            "<text x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"{}\"{fill}>{}</text>\n",
            anchor.name(),
            escape(text)
        );
    }

    /// Text centred on (x, y), turned to read bottom-up (a y-axis title).
    pub fn vertical_text(&mut self, x: f64, y: f64, text: &str) {
        self.body += &format!(
            "<text x=\"{x:.1}\" y=\"{y:.1}\" transform=\"rotate(-90 {x:.1} {y:.1})\" text-anchor=\"middle\">{}</text>\n",
            escape(text)
        );
    }

    /// A filled rectangle with its top-left corner at (x, y).
    pub fn rect(&mut self, x: f64, y: f64, width: f64, height: f64, fill: &str) {
        self.body += &format!(
            "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{width:.1}\" height=\"{height:.1}\" fill=\"{fill}\"/>\n"
        );
    }

    /// An open line through `points`.
    pub fn polyline(&mut self, points: &[(f64, f64)], stroke: &str) {
        let pts: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{x:.1},{y:.1}"))
            .collect();
        self.body += &format!(
            "<polyline fill=\"none\" stroke=\"{stroke}\" stroke-width=\"2\" points=\"{}\"/>\n",
            pts.join(" ")
        );
    }

    /// The finished document.
    pub fn finish(mut self) -> String {
        self.body += "</svg>\n";
        self.body
    }
}

/// `text` with the XML special characters escaped.
pub fn escape(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => s += "&amp;",
            '<' => s += "&lt;",
            '>' => s += "&gt;",
            '"' => s += "&quot;",
            c => s.push(c),
        }
    }
    s
}

/// One line of a chart: a name and its (x, y) points, in x order.
pub struct Series {
    /// Legend text.
    pub name: String,
    /// Points.
    pub points: Vec<(f64, f64)>,
}

/// Distinct line colours (cycled).
const COLORS: [&str; 10] = [
    "#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#7f7f7f", "#8c564b", "#e377c2",
    "#17becf", "#bcbd22",
];

/// A line chart of `series`. The x axis spans 0..max x, labelled at every
/// distinct x as a percentage; the y axis spans 0..`y_max` (1 for miss
/// ratios; `None` = the largest y rounded up to a tenth).
pub fn line_chart(series: &[Series], x_label: &str, y_label: &str, y_max: Option<f64>) -> String {
    let (w, h, m) = (720.0, 440.0, 60.0);
    let legend = 110.0;
    let all = || series.iter().flat_map(|s| s.points.iter());
    let max_x = all().map(|p| p.0).fold(0.0f64, f64::max).max(1e-9);
    let max_y = y_max
        .unwrap_or_else(|| (all().map(|p| p.1).fold(0.0f64, f64::max) * 10.0).ceil() / 10.0)
        .max(1e-9);
    let x = |v: f64| m + v / max_x * (w - 2.0 * m - legend);
    let y = |v: f64| h - m - v / max_y * (h - 2.0 * m);
    let mut s = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
    s += &format!(
        "<line x1=\"{m}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n<line x1=\"{m}\" y1=\"{m}\" x2=\"{m}\" y2=\"{}\" stroke=\"black\"/>\n",
        h - m,
        w - m - legend,
        h - m,
        h - m
    );
    for t in 0..=5 {
        let v = max_y * f64::from(t) / 5.0;
        s += &format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{v:.2}</text>\n",
            m - 6.0,
            y(v) + 4.0
        );
    }
    let mut xs: Vec<f64> = all().map(|p| p.0).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let mut last_label = f64::NEG_INFINITY;
    for v in &xs {
        if x(*v) - last_label < 24.0 {
            continue; // would overlap the previous label
        }
        last_label = x(*v);
        let pct = v * 100.0;
        let label = if (pct - pct.round()).abs() < 1e-6 {
            format!("{pct:.0}")
        } else {
            format!("{pct:.1}")
        };
        s += &format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{label}%</text>\n",
            x(*v),
            h - m + 18.0
        );
    }
    s += &format!(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{x_label}</text>\n",
        (w - legend) / 2.0,
        h - 15.0
    );
    s += &format!("<text x=\"15\" y=\"{}\" transform=\"rotate(-90 15 {})\" text-anchor=\"middle\">{y_label}</text>\n", h / 2.0, h / 2.0);
    for (i, line) in series.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        let pts: Vec<String> = line
            .points
            .iter()
            .map(|&(px, py)| format!("{:.1},{:.1}", x(px), y(py)))
            .collect();
        s += &format!(
            "<polyline fill=\"none\" stroke=\"{c}\" stroke-width=\"2\" points=\"{}\"/>\n",
            pts.join(" ")
        );
        s += &format!(
            "<text x=\"{}\" y=\"{}\" fill=\"{c}\">{}</text>\n",
            w - m - legend + 10.0,
            m + 16.0 * i as f64,
            line.name
        );
    }
    s += "</svg>\n";
    s
}

/// One panel of [`epoch_chart`]: a y axis and its lines.
pub struct Panel {
    /// y-axis title.
    pub y_label: String,
    /// Top of the y axis (`None` = the largest y rounded up to a tenth).
    pub y_max: Option<f64>,
    /// Lines, x = epoch.
    pub series: Vec<Series>,
}

/// Panels stacked over one shared x axis of epochs (integers, labelled
/// every epoch or, when crowded, every few), each with its own y axis
/// from 0 and a legend on the right: a training curve (loss above,
/// accuracies below).
pub fn epoch_chart(title: &str, panels: &[Panel]) -> String {
    let (w, m, legend, panel_h, gap) = (720.0, 60.0, 110.0, 220.0, 40.0);
    let h = 2.0 * m + panels.len() as f64 * panel_h + (panels.len().max(1) - 1) as f64 * gap;
    let all_x = || {
        panels
            .iter()
            .flat_map(|p| p.series.iter().flat_map(|s| s.points.iter().map(|q| q.0)))
    };
    let (min_x, max_x) = all_x().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    let (min_x, max_x) = if min_x.is_finite() {
        (min_x, max_x.max(min_x + 1.0))
    } else {
        (0.0, 1.0)
    };
    let x = |v: f64| m + (v - min_x) / (max_x - min_x) * (w - 2.0 * m - legend);
    let mut svg = Svg::new(w, h);
    svg.text((w - legend) / 2.0, m / 2.0, Anchor::Middle, None, title);
    for (i, panel) in panels.iter().enumerate() {
        let top = m + i as f64 * (panel_h + gap);
        let bottom = top + panel_h;
        let max_y = panel
            .y_max
            .unwrap_or_else(|| {
                let top_y = panel
                    .series
                    .iter()
                    .flat_map(|s| s.points.iter().map(|p| p.1));
                (top_y.filter(|y| y.is_finite()).fold(0.0f64, f64::max) * 10.0).ceil() / 10.0
            })
            .max(1e-9);
        let y = |v: f64| bottom - v / max_y * panel_h;
        svg.line(m, bottom, w - m - legend, bottom, "black");
        svg.line(m, top, m, bottom, "black");
        for t in 0..=4 {
            let v = max_y * f64::from(t) / 4.0;
            svg.text(m - 6.0, y(v) + 4.0, Anchor::End, None, &format!("{v:.2}"));
        }
        svg.vertical_text(15.0, (top + bottom) / 2.0, &panel.y_label);
        let step = ((max_x - min_x) / 12.0).ceil().max(1.0);
        let mut e = min_x;
        while e <= max_x + 1e-9 {
            svg.text(
                x(e),
                bottom + 18.0,
                Anchor::Middle,
                None,
                &format!("{e:.0}"),
            );
            e += step;
        }
        for (k, line) in panel.series.iter().enumerate() {
            let c = COLORS[k % COLORS.len()];
            let pts: Vec<(f64, f64)> = line
                .points
                .iter()
                .filter(|p| p.1.is_finite())
                .map(|&(px, py)| (x(px), y(py)))
                .collect();
            svg.polyline(&pts, c);
            for &(px, py) in &pts {
                svg.body +=
                    &format!("<circle cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"3\" fill=\"{c}\"/>\n");
            }
            svg.text(
                w - m - legend + 10.0,
                top + 16.0 * (k as f64 + 1.0),
                Anchor::Start,
                Some(c),
                &line.name,
            );
        }
    }
    svg.text((w - legend) / 2.0, h - 15.0, Anchor::Middle, None, "epoch");
    svg.finish()
}

/// Whether `doc` is well-formed XML as this module writes it: every
/// element closed in order, attributes quoted, text escaped; the error
/// names the byte offset of the first fault.
pub fn check_well_formed(doc: &str) -> Result<(), String> {
    let mut open: Vec<&str> = Vec::new();
    let mut rest = doc;
    let at = |r: &str| doc.len() - r.len();
    while let Some(lt) = rest.find('<') {
        let text = &rest[..lt];
        if text.contains('>')
            || text.split('&').skip(1).any(|t| {
                !["amp;", "lt;", "gt;", "quot;", "apos;"]
                    .iter()
                    .any(|e| t.starts_with(e))
            })
        {
            return Err(format!("byte {}: unescaped text {text:?}", at(rest)));
        }
        rest = &rest[lt..];
        let gt = rest
            .find('>')
            .ok_or_else(|| format!("byte {}: unterminated tag", at(rest)))?;
        let tag = &rest[1..gt];
        if tag.matches('"').count() % 2 != 0 || tag.contains('<') {
            return Err(format!("byte {}: malformed tag <{tag}>", at(rest)));
        }
        if let Some(name) = tag.strip_prefix('/') {
            match open.pop() {
                Some(o) if o == name.trim() => {}
                o => return Err(format!("byte {}: </{name}> closes {o:?}", at(rest))),
            }
        } else if !tag.ends_with('/') && !tag.starts_with('?') && !tag.starts_with('!') {
            let name = tag.split_whitespace().next().unwrap_or("");
            if name.is_empty() {
                return Err(format!("byte {}: empty tag", at(rest)));
            }
            open.push(name);
        }
        rest = &rest[gt + 1..];
    }
    if rest.contains('>') {
        return Err(format!("byte {}: stray '>'", at(rest)));
    }
    match open.as_slice() {
        [] => Ok(()),
        o => Err(format!("unclosed elements {o:?}")),
    }
}

#[cfg(test)]
mod epoch_chart_tests {
    use super::*;

    #[test]
    fn a_training_curve_is_well_formed_with_a_line_per_series() {
        let panels = [
            Panel {
                y_label: "training loss".into(),
                y_max: None,
                series: vec![Series {
                    name: "loss".into(),
                    points: vec![(0.0, 1.2), (1.0, 0.8), (2.0, 0.5)],
                }],
            },
            Panel {
                y_label: "accuracy".into(),
                y_max: Some(1.0),
                series: vec![
                    Series {
                        name: "train".into(),
                        points: vec![(0.0, 0.4), (1.0, 0.6), (2.0, 0.7)],
                    },
                    Series {
                        name: "valid <&>".into(),
                        points: vec![(1.0, 0.5), (2.0, f64::NAN)],
                    },
                ],
            },
        ];
        let doc = epoch_chart("sage on s", &panels);
        check_well_formed(&doc).unwrap();
        assert_eq!(doc.matches("<polyline").count(), 3);
        assert_eq!(doc.matches("<circle").count(), 7, "NaN points are left out");
        assert!(doc.contains(">valid &lt;&amp;&gt;</text>") && doc.contains(">epoch</text>"));
        // Loss 1.2 rounds the axis up to 1.2: the first point sits on the top.
        assert!(doc.contains("cx=\"60.0\" cy=\"60.0\""), "{doc}");
        assert!(check_well_formed("<svg><g></svg>").is_err());
        assert!(check_well_formed("<svg>a & b</svg>").is_err());
        assert!(check_well_formed("<svg><text x=\"1>a</text></svg>").is_err());
    }
}

#[cfg(test)]
mod line_chart_tests {
    use super::*;

    #[test]
    fn one_polyline_and_legend_entry_per_series() {
        let series = vec![
            Series {
                name: "a".into(),
                points: vec![(0.1, 0.5), (0.2, 0.25)],
            },
            Series {
                name: "b".into(),
                points: vec![(0.1, 1.0), (0.2, 0.75)],
            },
        ];
        let svg = line_chart(&series, "size", "miss ratio", Some(1.0));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains(">a</text>") && svg.contains(">b</text>"));
        assert!(svg.contains(">10%</text>") && svg.contains(">20%</text>"));
        // y = 1.0 sits on the top margin, y = 0.5 halfway down the axis.
        assert!(svg.contains("points=\"305.0,220.0 550.0,300.0\""), "{svg}");
        assert!(svg.contains("points=\"305.0,60.0 550.0,140.0\""), "{svg}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_has_every_element_and_escapes_text() {
        let mut s = Svg::new(100.0, 50.0);
        s.axes(100.0, 50.0, 10.0);
        s.text(5.0, 6.0, Anchor::End, Some("#d62728"), "a<b & \"c\"");
        s.vertical_text(3.0, 25.0, "seconds");
        s.rect(1.0, 2.0, 3.0, 4.0, "red");
        s.polyline(&[(0.0, 1.0), (2.5, 3.26)], "blue");
        let doc = s.finish();
        assert!(doc
            .starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"100\" height=\"50\""));
        assert!(doc.ends_with("</svg>\n"));
        assert_eq!(doc.matches("<line ").count(), 2);
        assert!(doc
            .contains("<line x1=\"10.0\" y1=\"40.0\" x2=\"90.0\" y2=\"40.0\" stroke=\"black\"/>"));
        assert!(
            doc.contains("text-anchor=\"end\" fill=\"#d62728\">a&lt;b &amp; &quot;c&quot;</text>")
        );
        assert!(doc.contains("transform=\"rotate(-90 3.0 25.0)\""));
        assert!(
            doc.contains("<rect x=\"1.0\" y=\"2.0\" width=\"3.0\" height=\"4.0\" fill=\"red\"/>")
        );
        assert!(doc.contains("points=\"0.0,1.0 2.5,3.3\""));
        assert_eq!(policy_color("ginex"), "#d62728");
        assert_eq!(policy_color("none"), "#7f7f7f");
        assert_eq!(policy_color("future"), "#8c564b");
    }
}
