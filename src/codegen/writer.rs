//! An indenting line writer for generated C.

/// An indenting line writer.
#[derive(Default)]
pub(crate) struct Writer {
    out: String,
    indent: usize,
}

impl Writer {
    /// A writer whose lines start `indent` levels deep.
    pub fn indented(indent: usize) -> Self {
        Writer {
            out: String::new(),
            indent,
        }
    }

    pub fn line(&mut self, s: impl AsRef<str>) {
        for _ in 0..self.indent {
            self.out.push_str("    ");
        }
        self.out.push_str(s.as_ref());
        self.out.push('\n');
    }

    /// Appends pre-formatted text verbatim.
    pub fn raw(&mut self, s: &str) {
        self.out.push_str(s);
    }

    /// A line ending in `{`; following lines are indented until [`Writer::close`].
    pub fn open(&mut self, s: impl AsRef<str>) {
        self.line(s);
        self.indent += 1;
    }

    pub fn close(&mut self) {
        self.indent = self.indent.saturating_sub(1);
        self.line("}");
    }

    pub fn into_string(self) -> String {
        self.out
    }
}
