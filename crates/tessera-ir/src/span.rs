//! Byte ranges into a program's source text, carried by IR nodes for diagnostics.

/// A half-open byte range `start..end` in the source text; `Span::NONE` for built nodes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span {
    /// First byte.
    pub start: u32,
    /// One past the last byte.
    pub end: u32,
}

impl Span {
    /// The span of nodes that come from the builder API rather than source text.
    pub const NONE: Span = Span { start: 0, end: 0 };

    /// A span from byte offsets.
    pub fn new(start: usize, end: usize) -> Self {
        let clamp = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
        Span {
            start: clamp(start),
            end: clamp(end.max(start)),
        }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        if self == Span::NONE {
            return other;
        }
        if other == Span::NONE {
            return self;
        }
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    /// As a `Range<usize>`, for diagnostic renderers.
    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}
