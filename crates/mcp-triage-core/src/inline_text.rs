//! [`InlineText`]: a short string kept inside its owner, a longer one on the heap.
//!
//! Why: a gateway handles every exchange with the library, and the few short strings an
//! exchange carries from one call to the next (an SSE stream's last event id, a request's tool
//! name) each cost a heap allocation and its free, which measured more than the work done with
//! them (bench/nginx-module-overhead.sh). Ids and tool names are almost always short.

/// Text of up to `N` bytes held inline; longer text is held in a `String`.
#[derive(Clone)]
pub struct InlineText<const N: usize> {
    inline: [u8; N],
    len: usize,
    /// Text longer than `N` bytes.
    long: Option<String>,
}

impl<const N: usize> InlineText<N> {
    /// Empty text.
    pub const fn new() -> Self {
        InlineText {
            inline: [0; N],
            len: 0,
            long: None,
        }
    }

    /// `text`, inline when it fits.
    pub fn of(text: &str) -> Self {
        let mut t = Self::new();
        t.set(text);
        t
    }

    /// Replaces the text. A long text's buffer is kept for the next long one; a short text
    /// drops it (a stream whose ids shrink does not keep a large buffer for them).
    pub fn set(&mut self, text: &str) {
        if text.len() <= N {
            self.inline[..text.len()].copy_from_slice(text.as_bytes());
            self.len = text.len();
            self.long = None;
        } else {
            let long = self.long.get_or_insert_with(String::new);
            long.clear();
            long.push_str(text);
        }
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        match &self.long {
            Some(long) => long,
            // written from a whole `&str` only, so always UTF-8
            None => crate::scan::utf8(&self.inline[..self.len]).unwrap_or_default(),
        }
    }
}

impl<const N: usize> Default for InlineText<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> std::fmt::Debug for InlineText<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl<const N: usize> PartialEq for InlineText<N> {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl<const N: usize> Eq for InlineText<N> {}

#[cfg(test)]
mod tests {
    use super::InlineText;

    #[test]
    fn short_and_long_text_round_trip_and_switch() {
        let mut t = InlineText::<4>::new();
        assert_eq!(t.as_str(), "");
        for text in ["ab", "abcd", "abcde", "é😀", "x", "a long one again", ""] {
            t.set(text);
            assert_eq!(t.as_str(), text);
            assert_eq!(t, InlineText::<4>::of(text));
        }
        assert_eq!(format!("{:?}", InlineText::<4>::of("q\"")), "\"q\\\"\"");
    }
}
