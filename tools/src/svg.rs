//! A small SVG line chart for the benches' plots (miss ratio against cache
//! size): axes, ticks, one coloured polyline and legend entry per series.

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

#[cfg(test)]
mod tests {
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
