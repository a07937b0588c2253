//! Typed host storage of fields: one contiguous row-major array per field (x fastest).

use std::borrow::Cow;

use tessera_analysis::BoundProgram;
use tessera_ir::ScalarType;
use tessera_ir::half::{f32_from_bf16_bits, f32_from_f16_bits, storage_bits_from_f32};

use crate::BackendError;
use crate::memory::bytes_text;
use crate::pages::{try_zeroed, zeroed};
use crate::storage::Storage;

/// One field's values, row-major with the fastest axis last. Large buffers made here (zeros,
/// poison, clones) sit on transparent huge pages where the system allows it.
#[derive(Clone, Debug, PartialEq)]
pub enum Buffer {
    /// `u8` elements.
    U8(Storage<u8>),
    /// `i32` elements.
    I32(Storage<i32>),
    /// `i64` elements.
    I64(Storage<i64>),
    /// `f16` elements, as their bit patterns (see `tessera_ir::half`).
    F16(Storage<u16>),
    /// `bf16` elements, as their bit patterns.
    Bf16(Storage<u16>),
    /// `f32` elements.
    F32(Storage<f32>),
    /// `f64` elements.
    F64(Storage<f64>),
}

impl Buffer {
    /// The elements of type `ty` whose bytes (native order, whole elements) are `bytes`.
    pub fn from_bytes(ty: ScalarType, bytes: &[u8]) -> Buffer {
        let mut out = Buffer::zeros(ty, bytes.len() / ty.size_bytes());
        out.as_bytes_mut().copy_from_slice(bytes);
        out
    }

    /// `len` zeros of type `ty` (`bool` is not storable and panics).
    pub fn zeros(ty: ScalarType, len: usize) -> Buffer {
        match ty {
            ScalarType::U8 => Buffer::U8(zeroed(len).into()),
            ScalarType::I32 => Buffer::I32(zeroed(len).into()),
            ScalarType::I64 => Buffer::I64(zeroed(len).into()),
            ScalarType::F16 => Buffer::F16(zeroed(len).into()),
            ScalarType::Bf16 => Buffer::Bf16(zeroed(len).into()),
            ScalarType::F32 => Buffer::F32(zeroed(len).into()),
            ScalarType::F64 => Buffer::F64(zeroed(len).into()),
            ScalarType::Bool => panic!("bool is not a storable field type"),
        }
    }

    /// Like [`Buffer::zeros`] (the zeros written, not left to fresh pages), or an error naming
    /// the size when the allocator has no room for it: what runs use, so that a memory limit
    /// is an error, not an abort.
    pub fn try_zeros(ty: ScalarType, len: usize) -> Result<Buffer, BackendError> {
        let no_room = || {
            BackendError::Resources(format!(
                "cannot allocate {} for {len} `{ty}` values: the allocator has no room (a memory limit such as `ulimit -v`, or no overcommit); use a smaller grid",
                bytes_text((len as u64).saturating_mul(ty.size_bytes() as u64))
            ))
        };
        Ok(match ty {
            ScalarType::U8 => Buffer::U8(try_zeroed(len).ok_or_else(no_room)?.into()),
            ScalarType::I32 => Buffer::I32(try_zeroed(len).ok_or_else(no_room)?.into()),
            ScalarType::I64 => Buffer::I64(try_zeroed(len).ok_or_else(no_room)?.into()),
            ScalarType::F16 => Buffer::F16(try_zeroed(len).ok_or_else(no_room)?.into()),
            ScalarType::Bf16 => Buffer::Bf16(try_zeroed(len).ok_or_else(no_room)?.into()),
            ScalarType::F32 => Buffer::F32(try_zeroed(len).ok_or_else(no_room)?.into()),
            ScalarType::F64 => Buffer::F64(try_zeroed(len).ok_or_else(no_room)?.into()),
            ScalarType::Bool => panic!("bool is not a storable field type"),
        })
    }

    /// `len` copies of the poison value of `ty`: NaN for floats, a sentinel for integers.
    /// Tests fill outputs with it so that an unwritten cell shows.
    pub fn poisoned(ty: ScalarType, len: usize) -> Buffer {
        let mut buffer = Buffer::zeros(ty, len);
        match &mut buffer {
            Buffer::U8(v) => v.fill(0xA5),
            Buffer::I32(v) => v.fill(i32::MIN + 7),
            Buffer::I64(v) => v.fill(i64::MIN + 7),
            Buffer::F16(v) => v.fill(0x7e00),
            Buffer::Bf16(v) => v.fill(0x7fc0),
            Buffer::F32(v) => v.fill(f32::NAN),
            Buffer::F64(v) => v.fill(f64::NAN),
        }
        buffer
    }

    /// `values` converted to `ty` as Rust's `as` does (`f16`/`bf16` through `f32`, rounded to
    /// nearest even); `bool` is not storable and panics.
    pub fn from_f64(ty: ScalarType, values: &[f64]) -> Buffer {
        let narrow = |ty| -> Storage<u16> {
            let bits = values.iter().map(|&v| storage_bits_from_f32(ty, v as f32));
            bits.collect::<Vec<_>>().into()
        };
        match ty {
            ScalarType::U8 => values.iter().map(|&v| v as u8).collect::<Vec<_>>().into(),
            ScalarType::I32 => values.iter().map(|&v| v as i32).collect::<Vec<_>>().into(),
            ScalarType::I64 => values.iter().map(|&v| v as i64).collect::<Vec<_>>().into(),
            ScalarType::F16 => Buffer::F16(narrow(ty)),
            ScalarType::Bf16 => Buffer::Bf16(narrow(ty)),
            ScalarType::F32 => values.iter().map(|&v| v as f32).collect::<Vec<_>>().into(),
            ScalarType::F64 => values.to_vec().into(),
            ScalarType::Bool => panic!("bool is not a storable field type"),
        }
    }

    /// The element type.
    pub fn ty(&self) -> ScalarType {
        match self {
            Buffer::U8(_) => ScalarType::U8,
            Buffer::I32(_) => ScalarType::I32,
            Buffer::I64(_) => ScalarType::I64,
            Buffer::F16(_) => ScalarType::F16,
            Buffer::Bf16(_) => ScalarType::Bf16,
            Buffer::F32(_) => ScalarType::F32,
            Buffer::F64(_) => ScalarType::F64,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Buffer::U8(v) => v.len(),
            Buffer::I32(v) => v.len(),
            Buffer::I64(v) => v.len(),
            Buffer::F16(v) | Buffer::Bf16(v) => v.len(),
            Buffer::F32(v) => v.len(),
            Buffer::F64(v) => v.len(),
        }
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i` converted to f64 (for comparisons, reports and pictures).
    pub fn get_f64(&self, i: usize) -> f64 {
        match self {
            Buffer::U8(v) => f64::from(v[i]),
            Buffer::I32(v) => f64::from(v[i]),
            Buffer::I64(v) => v[i] as f64,
            Buffer::F16(v) => f64::from(f32_from_f16_bits(v[i])),
            Buffer::Bf16(v) => f64::from(f32_from_bf16_bits(v[i])),
            Buffer::F32(v) => f64::from(v[i]),
            Buffer::F64(v) => v[i],
        }
    }

    /// An `f32` copy of an `f16`/`bf16` buffer (exact), the buffer itself otherwise: for
    /// writers of formats without 16-bit floats.
    pub fn widened(&self) -> Cow<'_, Buffer> {
        match self {
            Buffer::F16(_) | Buffer::Bf16(_) => {
                let values: Vec<f32> = (0..self.len()).map(|i| self.get_f64(i) as f32).collect();
                Cow::Owned(values.into())
            }
            _ => Cow::Borrowed(self),
        }
    }

    /// The raw bytes (native endianness), for device transfers and hashing.
    pub fn as_bytes(&self) -> &[u8] {
        fn bytes<T>(v: &[T]) -> &[u8] {
            // SAFETY: the element types are plain numbers with no padding; u8 has alignment 1.
            unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
        }
        match self {
            Buffer::U8(v) => v,
            Buffer::I32(v) => bytes(v),
            Buffer::I64(v) => bytes(v),
            Buffer::F16(v) | Buffer::Bf16(v) => bytes(v),
            Buffer::F32(v) => bytes(v),
            Buffer::F64(v) => bytes(v),
        }
    }

    /// The raw bytes, writable (for device-to-host transfers).
    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        fn bytes<T>(v: &mut [T]) -> &mut [u8] {
            // SAFETY: every bit pattern is a valid value of these plain number types.
            unsafe {
                std::slice::from_raw_parts_mut(
                    v.as_mut_ptr().cast::<u8>(),
                    std::mem::size_of_val(v),
                )
            }
        }
        match self {
            Buffer::U8(v) => v,
            Buffer::I32(v) => bytes(v),
            Buffer::I64(v) => bytes(v),
            Buffer::F16(v) | Buffer::Bf16(v) => bytes(v),
            Buffer::F32(v) => bytes(v),
            Buffer::F64(v) => bytes(v),
        }
    }

    /// The elements at `indices`, in that order (a receiver's sample).
    pub fn gather(&self, indices: &[usize]) -> Buffer {
        gather_bytes(self.ty(), self.as_bytes(), indices)
    }

    /// A raw pointer to the first element, for generated code.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.as_bytes_mut().as_mut_ptr()
    }
}

/// The elements of `parts` (each of type `ty`) one after the other.
pub fn concat(ty: ScalarType, parts: &[&Buffer]) -> Buffer {
    let mut out = Buffer::zeros(ty, parts.iter().map(|p| p.len()).sum());
    let mut at = 0;
    for part in parts {
        let bytes = part.as_bytes();
        out.as_bytes_mut()[at..at + bytes.len()].copy_from_slice(bytes);
        at += bytes.len();
    }
    out
}

/// The elements at `indices` of `bytes`, an array of `ty` values in native byte order (a
/// buffer's own bytes, or a backend's copy of them); an index past the end panics.
pub fn gather_bytes(ty: ScalarType, bytes: &[u8], indices: &[usize]) -> Buffer {
    let size = ty.size_bytes();
    let mut out = Buffer::zeros(ty, indices.len());
    let chunks = out.as_bytes_mut().chunks_exact_mut(size);
    for (chunk, &index) in chunks.zip(indices) {
        chunk.copy_from_slice(&bytes[index * size..(index + 1) * size]);
    }
    out
}

/// `From<Vec<T>>` for each element type: an owned buffer of those values.
macro_rules! buffer_from_vec {
    ($($ty:ty => $variant:ident),*) => {$(
        impl From<Vec<$ty>> for Buffer {
            fn from(values: Vec<$ty>) -> Buffer {
                Buffer::$variant(values.into())
            }
        }
    )*};
}

buffer_from_vec!(u8 => U8, i32 => I32, i64 => I64, f32 => F32, f64 => F64);

/// Every field of a bound program, indexed by field id, all with the grid's shape, and its
/// input tables (1D, of any length; read-only during a run).
#[derive(Clone, Debug, PartialEq)]
pub struct FieldSet {
    /// Grid extents, slowest axis first.
    pub shape: Vec<usize>,
    /// One buffer per field, in the program's field order.
    pub buffers: Vec<Buffer>,
    /// One buffer per input table, in the program's table order (empty until given).
    pub tables: Vec<Buffer>,
    /// The points given with the run for receivers declared `at input`, by receiver index
    /// (`None`, or no entry: not given); other receivers' points are in the program.
    pub receiver_points: Vec<Option<Vec<Vec<i64>>>>,
}

impl FieldSet {
    /// Zero-filled storage for every field of `program` (`tessera-reference` applies the
    /// declared initial values).
    pub fn zeros(program: &BoundProgram) -> FieldSet {
        let len = program.cell_count();
        let buffers = program
            .program()
            .fields
            .values()
            .map(|f| Buffer::zeros(f.ty, len))
            .collect();
        FieldSet {
            shape: program.extents.clone(),
            buffers,
            tables: empty_tables(program),
            receiver_points: Vec::new(),
        }
    }

    /// The tables' and receivers' storage of `program` without field buffers: what a process
    /// that does not hold the fields passes to a distributed run (ranks of an MPI job but
    /// rank 0, which hold only their boxes).
    pub fn without_fields(program: &BoundProgram) -> FieldSet {
        FieldSet {
            shape: program.extents.clone(),
            buffers: Vec::new(),
            tables: empty_tables(program),
            receiver_points: Vec::new(),
        }
    }

    /// Like [`FieldSet::zeros`], or an error naming the size when the allocator has no room.
    pub fn try_zeros(program: &BoundProgram) -> Result<FieldSet, BackendError> {
        let len = program.cell_count();
        let buffers = (program.program().fields.values())
            .map(|f| Buffer::try_zeros(f.ty, len))
            .collect::<Result<_, _>>()?;
        Ok(FieldSet {
            shape: program.extents.clone(),
            buffers,
            tables: empty_tables(program),
            receiver_points: Vec::new(),
        })
    }

    /// Number of points of the grid.
    pub fn cell_count(&self) -> usize {
        self.shape.iter().product()
    }

    /// The buffer of field `index` (a field id's index).
    pub fn buffer(&self, index: usize) -> &Buffer {
        &self.buffers[index]
    }

    /// The buffer of field `index`, writable.
    pub fn buffer_mut(&mut self, index: usize) -> &mut Buffer {
        &mut self.buffers[index]
    }
}

/// An empty buffer of each input table's element type: the tables not yet given.
pub fn empty_tables(program: &BoundProgram) -> Vec<Buffer> {
    (program.program().tables.values())
        .map(|t| Buffer::zeros(t.ty, 0))
        .collect()
}
