//! NumPy `.npy` files: read into a field (shape and dtype checked first), write any field; a
//! field of several components (a struct or vector field) as one array with a trailing
//! component axis.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::path::Path;

use ndarray::{ArrayD, ArrayViewD, IxDyn};
use ndarray_npy::npy::header::Header;
use ndarray_npy::{
    ReadNpyError, ReadNpyExt, ReadableElement, WritableElement, WriteNpyError, WriteNpyExt,
};
use tessera_ir::ScalarType;
use tessera_runtime::Buffer;

use crate::atomic::write_atomic;
use crate::describe::{descriptor_name, grid, numpy_name, numpy_shape};
use crate::error::IoError;

/// Reads `path` as the values of `field`, of element type `ty` on a grid of `shape` (slowest
/// axis first). The file must hold exactly that shape and element type (either byte order,
/// C or Fortran order); anything else is an error naming both.
pub fn read_npy(
    path: &Path,
    field: &str,
    ty: ScalarType,
    shape: &[usize],
) -> Result<Buffer, IoError> {
    let expected = format!("is {ty} on a {} grid", grid(shape));
    read_array(path, format!("field `{field}`"), ty, Some(shape), expected)
}

/// Reads `path` as the values of the input table `table`: a 1D array of any length of element
/// type `ty` (either byte order); anything else is an error naming both.
pub fn read_npy_table(path: &Path, table: &str, ty: ScalarType) -> Result<Buffer, IoError> {
    let expected = format!("is a 1D array of {ty} (any length)");
    read_array(path, format!("table `{table}`"), ty, None, expected)
}

/// Reads `path` as the points of the receiver `receiver` on a grid of `dims` axes: an integer
/// array (`int64`, `int32` or `uint8`) of shape `(n, dims)`, one row per point, coordinates
/// slowest axis first; anything else is an error naming both.
pub fn read_npy_points(path: &Path, receiver: &str, dims: usize) -> Result<Vec<Vec<i64>>, IoError> {
    let file = File::open(path).map_err(|source| IoError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let header = Header::from_reader(&mut BufReader::new(file))
        .map_err(|e| malformed(path, e.to_string()))?;
    let descr = (header.type_descriptor.as_string().cloned())
        .unwrap_or_else(|| header.type_descriptor.to_string());
    let ty = scalar_type_of(&descr)
        .filter(|t| t.is_integer())
        .unwrap_or(ScalarType::I64);
    let rows = header.shape.first().copied().unwrap_or(0);
    let expected = format!("is an integer array of shape (n, {dims}): one row per point");
    let target = format!("receiver `{receiver}`");
    let values = read_array(path, target, ty, Some(&[rows, dims]), expected)?;
    let coords: Vec<i64> = match values {
        Buffer::I64(v) => v.to_vec(),
        Buffer::I32(v) => v.iter().map(|&c| i64::from(c)).collect(),
        Buffer::U8(v) => v.iter().map(|&c| i64::from(c)).collect(),
        other => unreachable!("an integer array was read as {}", other.ty()),
    };
    Ok(coords.chunks(dims.max(1)).map(<[i64]>::to_vec).collect())
}

/// Reads `path` as the components of `field`, of element types `types`, on a grid of `shape`:
/// one component as [`read_npy`] does, several from one array of shape `shape + [k]` (`k`
/// components, element `[.., c]` of component `c`), which needs one element type for all.
pub fn read_npy_components(
    path: &Path,
    field: &str,
    types: &[ScalarType],
    shape: &[usize],
) -> Result<Vec<Buffer>, IoError> {
    let ty = common_type(path, field, types)?;
    if let [_] = types {
        return Ok(vec![read_npy(path, field, ty, shape)?]);
    }
    let array_shape = with_component_axis(shape, types.len());
    let expected = format!(
        "has {} {ty} components on a {} grid: shape {}",
        types.len(),
        grid(shape),
        numpy_shape(&array_shape)
    );
    let array = read_array(
        path,
        format!("field `{field}`"),
        ty,
        Some(&array_shape),
        expected,
    )?;
    Ok(deinterleave(&array, types.len()))
}

/// Writes the `components` of `field` on a grid of `shape` to `path` (atomically): one as
/// [`write_npy`] does, several interleaved into one array of shape `shape + [k]`, which needs
/// one element type for all.
pub fn write_npy_components(
    path: &Path,
    field: &str,
    components: &[&Buffer],
    shape: &[usize],
) -> Result<(), IoError> {
    let types: Vec<ScalarType> = components.iter().map(|c| c.ty()).collect();
    common_type(path, field, &types)?;
    match components {
        [one] => write_npy(path, one, shape),
        _ => write_npy(
            path,
            &interleave(components),
            &with_component_axis(shape, components.len()),
        ),
    }
}

/// The one element type of a field's components, which a `.npy` file of them needs; an error
/// naming the types when they differ.
pub fn common_type(path: &Path, field: &str, types: &[ScalarType]) -> Result<ScalarType, IoError> {
    match types {
        [first, rest @ ..] if rest.iter().all(|t| t == first) => Ok(*first),
        _ => Err(IoError::MixedTypes {
            path: path.to_path_buf(),
            field: field.to_string(),
            types: types
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

/// `shape` with a trailing axis of `components`.
fn with_component_axis(shape: &[usize], components: usize) -> Vec<usize> {
    [shape, &[components]].concat()
}

/// One array of the components' elements, element `i` of component `c` at `i * k + c`.
fn interleave(components: &[&Buffer]) -> Buffer {
    let (k, ty) = (components.len(), components[0].ty());
    let width = ty.size_bytes();
    let mut array = Buffer::zeros(ty, components[0].len() * k);
    let bytes = array.as_bytes_mut();
    for (c, component) in components.iter().enumerate() {
        for (i, element) in component.as_bytes().chunks_exact(width).enumerate() {
            let at = (i * k + c) * width;
            bytes[at..at + width].copy_from_slice(element);
        }
    }
    array
}

/// The `k` components of an interleaved array: the inverse of [`interleave`].
fn deinterleave(array: &Buffer, k: usize) -> Vec<Buffer> {
    let width = array.ty().size_bytes();
    let elements: Vec<&[u8]> = array.as_bytes().chunks_exact(width).collect();
    (0..k)
        .map(|c| {
            let mut component = Buffer::zeros(array.ty(), array.len() / k);
            let bytes = component.as_bytes_mut();
            for (i, element) in elements.iter().skip(c).step_by(k).enumerate() {
                bytes[i * width..(i + 1) * width].copy_from_slice(element);
            }
            component
        })
        .collect()
}

/// Reads `path`, which must hold an array of `shape` (`None`: of one axis, of any length) and
/// element type `ty`; otherwise an error saying what it holds and that `target` (``field
/// `u` ``) `expected`.
fn read_array(
    path: &Path,
    target: String,
    ty: ScalarType,
    shape: Option<&[usize]>,
    expected: String,
) -> Result<Buffer, IoError> {
    let file = File::open(path).map_err(|source| IoError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let mut reader = BufReader::new(file);
    let header = Header::from_reader(&mut reader).map_err(|e| malformed(path, e.to_string()))?;
    let descr = header
        .type_descriptor
        .as_string()
        .cloned()
        .unwrap_or_else(|| header.type_descriptor.to_string());
    let found = scalar_type_of(&descr);
    let shape_fits = match shape {
        Some(shape) => header.shape == shape,
        None => header.shape.len() == 1,
    };
    if found != Some(ty) || !shape_fits {
        let hint = if shape_fits {
            format!(
                "; convert it with `numpy.save(\"{}\", a.astype(numpy.{}))`",
                path.display(),
                numpy_name(ty)
            )
        } else {
            String::new()
        };
        return Err(IoError::Mismatch {
            path: path.to_path_buf(),
            found: format!(
                "shape {} and dtype {}",
                numpy_shape(&header.shape),
                descriptor_name(&descr)
            ),
            target,
            expected,
            hint,
        });
    }
    reader
        .seek(SeekFrom::Start(0))
        .map_err(|source| IoError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    let values = match ty {
        ScalarType::U8 => Buffer::U8(read_values(path, reader)?.into()),
        ScalarType::I32 => Buffer::I32(read_values(path, reader)?.into()),
        ScalarType::I64 => Buffer::I64(read_values(path, reader)?.into()),
        ScalarType::F16 => {
            let mut bytes = Vec::new();
            reader
                .read_to_end(&mut bytes)
                .map_err(|source| IoError::Read {
                    path: path.to_path_buf(),
                    source,
                })?;
            retag(&mut bytes, b'f', b'u');
            Buffer::F16(read_values(path, bytes.as_slice())?.into())
        }
        ScalarType::Bf16 => Buffer::Bf16(read_values(path, reader)?.into()),
        ScalarType::F32 => Buffer::F32(read_values(path, reader)?.into()),
        ScalarType::F64 => Buffer::F64(read_values(path, reader)?.into()),
        ScalarType::Bool => unreachable!("no .npy descriptor maps to bool"),
    };
    Ok(values)
}

/// Writes `buffer`, a field on a grid of `shape`, to `path` as a C-order `.npy` file (atomically).
pub fn write_npy(path: &Path, buffer: &Buffer, shape: &[usize]) -> Result<(), IoError> {
    write_atomic(path, |out| match buffer {
        Buffer::U8(v) => write_values(out, v, shape),
        Buffer::I32(v) => write_values(out, v, shape),
        Buffer::I64(v) => write_values(out, v, shape),
        Buffer::F16(v) => {
            let mut bytes = Vec::new();
            write_values(&mut bytes, v, shape)?;
            retag(&mut bytes, b'u', b'f');
            out.write_all(&bytes)
        }
        Buffer::Bf16(v) => write_values(out, v, shape),
        Buffer::F32(v) => write_values(out, v, shape),
        Buffer::F64(v) => write_values(out, v, shape),
    })
}

/// Changes the kind code of a 2-byte dtype descriptor in the header of the `.npy` file `bytes`
/// from `from` to `to` (`'<f2'` and `'<u2'`, same length): ndarray-npy has no `float16`, whose
/// elements are read and written as their `u16` bit patterns.
fn retag(bytes: &mut [u8], from: u8, to: u8) {
    let header_end = bytes
        .iter()
        .position(|&b| b == b'\n')
        .unwrap_or(bytes.len());
    for order in [b'<', b'>'] {
        let descriptor = [b'\'', order, from, b'2', b'\''];
        if let Some(at) = bytes[..header_end]
            .windows(descriptor.len())
            .position(|w| w == descriptor)
        {
            bytes[at + 2] = to;
            return;
        }
    }
}

/// The storable element type of a dtype descriptor, ignoring byte order.
fn scalar_type_of(descr: &str) -> Option<ScalarType> {
    let code = descr.trim_start_matches(['<', '>', '|', '=']);
    [
        ScalarType::U8,
        ScalarType::I32,
        ScalarType::I64,
        ScalarType::F16,
        ScalarType::Bf16,
        ScalarType::F32,
        ScalarType::F64,
    ]
    .into_iter()
    .find(|t| &t.numpy_descr()[1..] == code)
}

fn read_values<T: ReadableElement + Copy>(
    path: &Path,
    reader: impl Read,
) -> Result<Vec<T>, IoError> {
    let array = ArrayD::<T>::read_npy(reader).map_err(|e| match e {
        ReadNpyError::Io(source) => IoError::Read {
            path: path.to_path_buf(),
            source,
        },
        ReadNpyError::MissingData => malformed(
            path,
            "the file ends before all the values its header declares".into(),
        ),
        other => malformed(path, other.to_string()),
    })?;
    Ok(array.iter().copied().collect())
}

fn write_values<T: WritableElement>(
    out: &mut dyn Write,
    values: &[T],
    shape: &[usize],
) -> io::Result<()> {
    let view = ArrayViewD::from_shape(IxDyn(shape), values).map_err(|e| {
        io::Error::other(format!(
            "{} values do not fill a {} grid: {e}",
            values.len(),
            grid(shape)
        ))
    })?;
    view.write_npy(out).map_err(|e| match e {
        WriteNpyError::Io(e) => e,
        other => io::Error::other(other.to_string()),
    })
}

fn malformed(path: &Path, reason: String) -> IoError {
    IoError::Malformed {
        path: path.to_path_buf(),
        format: ".npy",
        reason,
    }
}

#[cfg(test)]
mod tests {
    use ndarray::ShapeBuilder;

    use super::*;

    fn every_type(len: usize) -> Vec<Buffer> {
        vec![
            Buffer::U8(
                (0..len)
                    .map(|i| (i * 37 % 256) as u8)
                    .collect::<Vec<_>>()
                    .into(),
            ),
            Buffer::I32(
                (0..len)
                    .map(|i| i as i32 * -7919)
                    .collect::<Vec<_>>()
                    .into(),
            ),
            Buffer::I64(
                (0..len)
                    .map(|i| i as i64 * 1_000_000_007)
                    .collect::<Vec<_>>()
                    .into(),
            ),
            Buffer::F32(
                (0..len)
                    .map(|i| i as f32 / 3.0 - 1.5)
                    .collect::<Vec<_>>()
                    .into(),
            ),
            Buffer::F64(
                (0..len)
                    .map(|i| (i as f64).sin())
                    .collect::<Vec<_>>()
                    .into(),
            ),
            Buffer::F16(
                (0..len)
                    .map(|i| (i * 2749) as u16)
                    .collect::<Vec<_>>()
                    .into(),
            ),
            Buffer::Bf16(
                (0..len)
                    .map(|i| (i * 977) as u16)
                    .collect::<Vec<_>>()
                    .into(),
            ),
        ]
    }

    #[test]
    fn f16_files_are_float16_and_bf16_files_their_bits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.npy");
        for (buffer, descr) in [
            (Buffer::F16(vec![0x3c00, 0xc000].into()), "'<f2'"),
            (Buffer::Bf16(vec![0x3f80, 0x7fc0].into()), "'<u2'"),
        ] {
            write_npy(&path, &buffer, &[2]).unwrap();
            let bytes = std::fs::read(&path).unwrap();
            let header = String::from_utf8_lossy(&bytes[10..bytes.len() - 4]);
            assert!(header.contains(&format!("'descr': {descr}")), "{header}");
            assert_eq!(
                &bytes[bytes.len() - 4..bytes.len() - 2],
                &buffer.as_bytes()[..2]
            );
        }
        // A big-endian float16 file as NumPy writes it.
        let header = "{'descr': '>f2', 'fortran_order': False, 'shape': (2,), }";
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        let padded = format!("{header:<117}\n");
        bytes.extend_from_slice(&(padded.len() as u16).to_le_bytes());
        bytes.extend_from_slice(padded.as_bytes());
        bytes.extend_from_slice(&[0x3c, 0x00, 0x7b, 0xff]);
        std::fs::write(&path, bytes).unwrap();
        assert_eq!(
            read_npy(&path, "h", ScalarType::F16, &[2]).unwrap(),
            Buffer::F16(vec![0x3c00, 0x7bff].into())
        );
        let error = read_npy(&path, "h", ScalarType::Bf16, &[2])
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("float16") && error.contains("uint16"),
            "{error}"
        );
    }

    #[test]
    fn every_storable_type_round_trips_on_awkward_shapes() {
        let dir = tempfile::tempdir().unwrap();
        for shape in [vec![7], vec![3, 5], vec![2, 3, 5], vec![1, 2, 1, 3]] {
            let len = shape.iter().product();
            for buffer in every_type(len) {
                let path = dir.path().join(format!("{}.npy", buffer.ty()));
                write_npy(&path, &buffer, &shape).unwrap();
                assert_eq!(read_npy(&path, "A", buffer.ty(), &shape).unwrap(), buffer);
            }
        }
    }

    #[test]
    fn writes_files_numpy_understands() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.npy");
        write_npy(
            &path,
            &Buffer::F32(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0].into()),
            &[2, 3],
        )
        .unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[..6], b"\x93NUMPY");
        let header = String::from_utf8_lossy(&bytes[10..bytes.len() - 24]);
        assert!(
            header.contains("'descr': '<f4'") && header.contains("'shape': (2, 3)"),
            "{header}"
        );
        assert!(header.contains("'fortran_order': False"), "{header}");
        assert_eq!(&bytes[bytes.len() - 4..], 6.0f32.to_le_bytes());
    }

    #[test]
    fn reads_fortran_order_and_big_endian_files_in_grid_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.npy");
        let f = ndarray::Array2::from_shape_vec((2, 3).f(), vec![1.0f64, 4.0, 2.0, 5.0, 3.0, 6.0])
            .unwrap();
        ndarray_npy::write_npy(&path, &f).unwrap();
        assert_eq!(
            read_npy(&path, "A", ScalarType::F64, &[2, 3]).unwrap(),
            Buffer::F64(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0].into())
        );
        let big = dir.path().join("big.npy");
        let header = "{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }";
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        let padded = format!("{header:<117}\n");
        bytes.extend_from_slice(&(padded.len() as u16).to_le_bytes());
        bytes.extend_from_slice(padded.as_bytes());
        bytes.extend_from_slice(&7i32.to_be_bytes());
        bytes.extend_from_slice(&(-9i32).to_be_bytes());
        std::fs::write(&big, bytes).unwrap();
        assert_eq!(
            read_npy(&big, "A", ScalarType::I32, &[2]).unwrap(),
            Buffer::I32(vec![7, -9].into())
        );
    }

    #[test]
    fn a_wrong_shape_names_both_shapes_and_types() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.npy");
        write_npy(&path, &Buffer::F64(vec![0.0; 66 * 67].into()), &[66, 67]).unwrap();
        let err = read_npy(&path, "A", ScalarType::F32, &[67, 67]).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{} has shape (66, 67) and dtype float64, but field `A` is f32 on a 67x67 grid",
                path.display()
            )
        );
    }

    #[test]
    fn a_wrong_dtype_says_how_to_convert() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.npy");
        write_npy(&path, &Buffer::I64(vec![0; 4].into()), &[4]).unwrap();
        let err = read_npy(&path, "k", ScalarType::F64, &[4]).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{p} has shape (4,) and dtype int64, but field `k` is f64 on a 4 grid; convert it with `numpy.save(\"{p}\", a.astype(numpy.float64))`",
                p = path.display()
            )
        );
    }

    #[test]
    fn missing_truncated_and_foreign_files_are_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.npy");
        let err = read_npy(&missing, "A", ScalarType::F32, &[2]).unwrap_err();
        assert!(
            err.to_string()
                .starts_with(&format!("cannot read {}: ", missing.display())),
            "{err}"
        );

        let short = dir.path().join("short.npy");
        write_npy(&short, &Buffer::F32(vec![1.0; 8].into()), &[8]).unwrap();
        let bytes = std::fs::read(&short).unwrap();
        std::fs::write(&short, &bytes[..bytes.len() - 5]).unwrap();
        let err = read_npy(&short, "A", ScalarType::F32, &[8]).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{} is not a valid .npy file: the file ends before all the values its header declares",
                short.display()
            )
        );

        let text = dir.path().join("text.npy");
        std::fs::write(&text, "1 2 3\n").unwrap();
        let err = read_npy(&text, "A", ScalarType::F32, &[3]).unwrap_err();
        assert!(
            err.to_string()
                .starts_with(&format!("{} is not a valid .npy file: ", text.display())),
            "{err}"
        );
    }

    #[test]
    fn components_round_trip_through_one_array_with_a_trailing_axis() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.npy");
        let x = Buffer::F32(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0].into());
        let y = Buffer::F32(vec![-1.0, -2.0, -3.0, -4.0, -5.0, -6.0].into());
        write_npy_components(&path, "E", &[&x, &y], &[2, 3]).unwrap();
        assert_eq!(
            read_npy(&path, "E", ScalarType::F32, &[2, 3, 2]).unwrap(),
            Buffer::F32(
                vec![
                    1.0, -1.0, 2.0, -2.0, 3.0, -3.0, 4.0, -4.0, 5.0, -5.0, 6.0, -6.0
                ]
                .into()
            )
        );
        let types = [ScalarType::F32; 2];
        assert_eq!(
            read_npy_components(&path, "E", &types, &[2, 3]).unwrap(),
            vec![x.clone(), y]
        );
        write_npy_components(&path, "u", &[&x], &[2, 3]).unwrap();
        assert_eq!(
            read_npy_components(&path, "u", &[ScalarType::F32], &[2, 3]).unwrap(),
            vec![x]
        );
    }

    #[test]
    fn a_wrong_component_axis_names_the_field_and_both_shapes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.npy");
        write_npy(&path, &Buffer::F32(vec![0.0; 2 * 3 * 2].into()), &[2, 3, 2]).unwrap();
        let err = read_npy_components(&path, "E", &[ScalarType::F32; 3], &[2, 3]).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{} has shape (2, 3, 2) and dtype float32, but field `E` has 3 f32 components on a 2x3 grid: shape (2, 3, 3)",
                path.display()
            )
        );
    }

    #[test]
    fn components_of_different_types_are_refused_naming_the_types() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.npy");
        let types = [ScalarType::F32, ScalarType::I32];
        let expected = format!(
            "`S` has components of different types (f32, i32) and {} would hold one dtype; give each component its own file",
            path.display()
        );
        let err = read_npy_components(&path, "S", &types, &[2]).unwrap_err();
        assert_eq!(err.to_string(), expected);
        let (a, b) = (
            Buffer::F32(vec![1.0, 2.0].into()),
            Buffer::I32(vec![1, 2].into()),
        );
        let err = write_npy_components(&path, "S", &[&a, &b], &[2]).unwrap_err();
        assert_eq!(err.to_string(), expected);
        assert!(!path.exists());
    }

    #[test]
    fn writing_into_a_missing_directory_fails_without_leaving_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nope").join("a.npy");
        let err = write_npy(&path, &Buffer::U8(vec![1, 2].into()), &[2]).unwrap_err();
        assert!(
            err.to_string()
                .starts_with(&format!("cannot write {}: ", path.display())),
            "{err}"
        );
        assert!(!path.exists());
    }
}
