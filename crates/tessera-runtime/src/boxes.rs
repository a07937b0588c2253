//! Boxes of fields as bytes: every field's points of a box, field after field, row after row
//! (rows along the fastest axis). The messages of a halo exchange are in this layout.

use tessera_analysis::region::Rect;

use crate::buffer::{Buffer, FieldSet};

/// The byte ranges `(offset, length)` of a box's rows in an array of `shape` whose elements
/// are `width` bytes, in row order.
pub fn box_rows(rect: &Rect, shape: &[usize], width: usize) -> Vec<(usize, usize)> {
    if rect.is_empty() {
        return Vec::new();
    }
    let dims = rect.dims();
    let row = rect.len(dims - 1) as usize * width;
    let mut starts: Vec<Vec<i64>> = vec![Vec::new()];
    for a in 0..dims {
        let range: Vec<i64> = match a + 1 == dims {
            true => vec![rect.lo[a]],
            false => (rect.lo[a]..rect.hi[a]).collect(),
        };
        starts = (starts.iter())
            .flat_map(|p| {
                range.iter().map(move |&i| {
                    let mut q = p.clone();
                    q.push(i);
                    q
                })
            })
            .collect();
    }
    (starts.iter())
        .map(|start| (Rect::linear_index(start, shape) * width, row))
        .collect()
}

/// The byte ranges `(offset, length)` of a box in an array of `shape` whose elements are
/// `width` bytes, in order, with rows that follow each other in memory joined (a box spanning
/// the trailing axes whole is one range): what a device copies in one transfer each.
pub fn box_chunks(rect: &Rect, shape: &[usize], width: usize) -> Vec<(usize, usize)> {
    let mut chunks: Vec<(usize, usize)> = Vec::new();
    for (offset, len) in box_rows(rect, shape, width) {
        match chunks.last_mut() {
            Some(last) if last.0 + last.1 == offset => last.1 += len,
            _ => chunks.push((offset, len)),
        }
    }
    chunks
}

/// Bytes per element of a buffer.
pub fn element_width(buffer: &Buffer) -> usize {
    buffer.as_bytes().len() / buffer.len().max(1)
}

/// The bytes of the box `rect` of every field of `fields`.
pub fn pack_box(fields: &FieldSet, rect: &Rect) -> Vec<u8> {
    let mut out = Vec::new();
    for buffer in &fields.buffers {
        let bytes = buffer.as_bytes();
        for (offset, len) in box_rows(rect, &fields.shape, element_width(buffer)) {
            out.extend_from_slice(&bytes[offset..offset + len]);
        }
    }
    out
}

/// Writes bytes made by [`pack_box`] (of a box of the same size) into the box `rect`.
pub fn unpack_box(bytes: &[u8], fields: &mut FieldSet, rect: &Rect) {
    let mut at = 0;
    let shape = fields.shape.clone();
    for buffer in &mut fields.buffers {
        let width = element_width(buffer);
        let data = buffer.as_bytes_mut();
        for (offset, len) in box_rows(rect, &shape, width) {
            data[offset..offset + len].copy_from_slice(&bytes[at..at + len]);
            at += len;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_join_rows_that_follow_each_other() {
        let shape = [4, 5, 6];
        // Whole rows and planes of the trailing axes: one range.
        let slab = Rect::new(vec![1, 0, 0], vec![3, 5, 6]);
        assert_eq!(box_chunks(&slab, &shape, 4), vec![(30 * 4, 60 * 4)]);
        // Part of the middle axis: one range per plane.
        let strip = Rect::new(vec![0, 1, 0], vec![2, 3, 6]);
        assert_eq!(box_chunks(&strip, &shape, 2), vec![(12, 24), (72, 24)]);
        // Part of the fastest axis: one range per row, as `box_rows`.
        let column = Rect::new(vec![0, 0, 2], vec![1, 2, 3]);
        assert_eq!(box_chunks(&column, &shape, 8), box_rows(&column, &shape, 8));
        assert!(box_chunks(&Rect::empty(3), &shape, 4).is_empty());
    }
}
