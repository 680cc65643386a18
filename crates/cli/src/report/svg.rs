//! A small builder of inline SVG and HTML text: escaping, elements with attributes, and the
//! scales that map virtual time and values to chart coordinates. Nothing here refers to a
//! resource outside the document.

use std::fmt::Write;

/// Text escaped for HTML and SVG element content and quoted attribute values.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// An SVG document being written: elements are appended in drawing order.
pub struct Svg {
    width: f64,
    height: f64,
    body: String,
}

impl Svg {
    pub fn new(width: f64, height: f64) -> Svg {
        Svg {
            width,
            height,
            body: String::new(),
        }
    }

    /// Appends `<name attr="value"...>` with `text` as its content (escaped), or a
    /// self-closing element when `text` is empty.
    pub fn element(&mut self, name: &str, attrs: &[(&str, String)], text: &str) {
        let _ = write!(self.body, "<{name}");
        for (k, v) in attrs {
            let _ = write!(self.body, " {k}=\"{}\"", esc(v));
        }
        if text.is_empty() {
            self.body.push_str("/>");
        } else {
            let _ = write!(self.body, ">{}</{name}>", esc(text));
        }
    }

    /// A path through `points`, with a `<title>` a browser shows on hover.
    pub fn path(&mut self, d: &str, stroke: &str, fill: &str, class: &str, title: &str) {
        let _ = write!(
            self.body,
            "<path class=\"{}\" d=\"{d}\" stroke=\"{}\" fill=\"{}\"><title>{}</title></path>",
            esc(class),
            esc(stroke),
            esc(fill),
            esc(title)
        );
    }

    pub fn text(&mut self, x: f64, y: f64, anchor: &str, text: &str) {
        self.element(
            "text",
            &[("x", fmt(x)), ("y", fmt(y)), ("text-anchor", anchor.into())],
            text,
        );
    }

    pub fn line(&mut self, (x1, y1): (f64, f64), (x2, y2): (f64, f64), stroke: &str, class: &str) {
        self.element(
            "line",
            &[
                ("x1", fmt(x1)),
                ("y1", fmt(y1)),
                ("x2", fmt(x2)),
                ("y2", fmt(y2)),
                ("stroke", stroke.into()),
                ("class", class.into()),
            ],
            "",
        );
    }

    pub fn rect(&mut self, (x, y): (f64, f64), (w, h): (f64, f64), fill: &str, title: &str) {
        let _ = write!(
            self.body,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}</title></rect>",
            fmt(x),
            fmt(y),
            fmt(w.max(0.5)),
            fmt(h),
            esc(fill),
            esc(title)
        );
    }

    /// The finished `<svg>` element (with the SVG namespace, the one URL the page carries).
    pub fn finish(self, label: &str) -> String {
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" \
             height=\"{h}\" role=\"img\" aria-label=\"{}\">{}</svg>",
            esc(label),
            self.body,
            w = fmt(self.width),
            h = fmt(self.height),
        )
    }
}

/// A coordinate with at most one decimal (keeps the document small).
pub fn fmt(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r == r.trunc() {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

/// A linear map from a domain to a range of coordinates.
#[derive(Clone, Copy)]
pub struct Scale {
    pub d0: f64,
    pub d1: f64,
    pub r0: f64,
    pub r1: f64,
}

impl Scale {
    pub fn at(&self, v: f64) -> f64 {
        if self.d1 <= self.d0 {
            return self.r0;
        }
        self.r0 + (v - self.d0) / (self.d1 - self.d0) * (self.r1 - self.r0)
    }
}

/// A step line (the value holds until the next point) through `(t, v)` points, as SVG path data.
pub fn step_path(points: &[(f64, f64)], x: Scale, y: Scale, end: f64) -> String {
    let mut d = String::new();
    for (i, (t, v)) in points.iter().enumerate() {
        let (px, py) = (fmt(x.at(*t)), fmt(y.at(*v)));
        if i == 0 {
            let _ = write!(d, "M{px},{py}");
        } else {
            let _ = write!(d, "H{px}V{py}");
        }
    }
    if !points.is_empty() {
        let _ = write!(d, "H{}", fmt(x.at(end)));
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_markup_characters_are_escaped_in_text_and_attributes() {
        let mut svg = Svg::new(10.0, 10.0);
        svg.text(1.0, 2.0, "start", "<n&1 \"q\" 'a'>");
        svg.path("M0,0", "#000", "none", "a\"b", "pod <x>");
        let out = svg.finish("chart & <legend>");
        assert!(out.contains("&lt;n&amp;1 &quot;q&quot; &#39;a&#39;&gt;"));
        assert!(out.contains("class=\"a&quot;b\""));
        assert!(out.contains("<title>pod &lt;x&gt;</title>"));
        assert!(out.contains("aria-label=\"chart &amp; &lt;legend&gt;\""));
        assert!(!out.contains("<n&1"));
    }

    #[test]
    fn a_step_path_holds_each_value_until_the_next_point_and_the_end() {
        let x = Scale {
            d0: 0.0,
            d1: 10.0,
            r0: 0.0,
            r1: 100.0,
        };
        let y = Scale {
            d0: 0.0,
            d1: 4.0,
            r0: 40.0,
            r1: 0.0,
        };
        let d = step_path(&[(0.0, 0.0), (5.0, 2.0)], x, y, 10.0);
        assert_eq!(d, "M0,40H50V20H100");
    }

    #[test]
    fn an_empty_domain_maps_to_the_start_of_the_range() {
        let s = Scale {
            d0: 3.0,
            d1: 3.0,
            r0: 7.0,
            r1: 9.0,
        };
        assert_eq!(s.at(3.0), 7.0);
    }
}
