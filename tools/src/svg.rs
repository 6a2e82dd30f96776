//! A tiny SVG writer for the benchmark plots: a white canvas, axis lines,
//! text, rectangles and polylines, with a shared colour palette.

/// Series colours, in order (red first: ginex).
pub const PALETTE: [&str; 6] = [
    "#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#7f7f7f",
];

/// The colour of a feature-cache policy: the same in every plot (ginex red),
/// grey for a policy not in the palette's list.
pub fn policy_color(policy: &str) -> &'static str {
    ["ginex", "degree", "presc", "lru", "mmap", "none"]
        .iter()
        .position(|p| *p == policy)
        .and_then(|i| PALETTE.get(i).copied())
        .unwrap_or("#8c564b")
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
        assert_eq!(policy_color("ginex"), PALETTE[0]);
        assert_eq!(policy_color("none"), PALETTE[5]);
        assert_eq!(policy_color("future"), "#8c564b");
    }
}
