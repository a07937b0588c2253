//! VTK XML image data (`.vti`) for ParaView and VisIt: point data on a regular grid, each array
//! inline as base64-encoded little-endian binary with a 64-bit length header.
//!
//! VTK's axes are (x, y, z) with x fastest, which is Tessera's row-major order read backwards:
//! a grid `[nz, ny, nx]` becomes `WholeExtent="0 nx-1 0 ny-1 0 nz-1"`, and 1D and 2D grids get
//! extent `0 0` on the missing axes. Spacing is 1 and the origin 0.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::Path;

use tessera_ir::ScalarType;
use tessera_runtime::Buffer;

use crate::atomic::write_atomic;
use crate::base64;
use crate::describe::grid;
use crate::error::IoError;

/// One named array of a `.vti` file: a scalar field, or the components of a vector/struct field
/// (written interleaved as one multi-component array).
#[derive(Clone, Debug)]
pub struct VtiArray<'a> {
    /// The array's name in ParaView (the field's name).
    pub name: &'a str,
    /// One buffer per component, all of one element type and the grid's size.
    pub components: Vec<&'a Buffer>,
}

/// Checks, before any computation, that arrays named `names` with components of `types` on a
/// grid of `shape` can be written to the VTK image `path`.
pub fn check_vti(
    path: &Path,
    shape: &[usize],
    arrays: &[(&str, &[ScalarType])],
) -> Result<(), IoError> {
    let unsupported = |field: &str, reason: String| IoError::Unsupported {
        path: path.to_path_buf(),
        field: field.to_string(),
        reason,
    };
    let first = arrays.first().map_or("", |a| a.0);
    if shape.is_empty() || shape.len() > 3 {
        return Err(unsupported(
            first,
            format!(
                "VTK image data has 1 to 3 axes and the grid is {}; write .npy instead",
                grid(shape)
            ),
        ));
    }
    for (name, types) in arrays {
        if types.is_empty() || types.iter().any(|&t| t != types[0]) {
            return Err(unsupported(name, "the components of one VTK array must share one element type; write them one by one".into()));
        }
    }
    Ok(())
}

/// Writes `arrays` on a grid of `shape` (1 to 3 axes, slowest first) to `path` (atomically).
pub fn write_vti(path: &Path, shape: &[usize], arrays: &[VtiArray<'_>]) -> Result<(), IoError> {
    let types: Vec<Vec<ScalarType>> = arrays
        .iter()
        .map(|a| a.components.iter().map(|b| b.ty()).collect())
        .collect();
    let described: Vec<(&str, &[ScalarType])> = arrays
        .iter()
        .zip(&types)
        .map(|(a, t)| (a.name, t.as_slice()))
        .collect();
    check_vti(path, shape, &described)?;
    let mut extent = String::new();
    for axis in 0..3 {
        let n = shape.len().checked_sub(axis + 1).map_or(1, |a| shape[a]);
        let _ = write!(extent, "{}0 {}", if axis == 0 { "" } else { " " }, n - 1);
    }
    write_atomic(path, |out| {
        writeln!(out, "<?xml version=\"1.0\"?>")?;
        writeln!(
            out,
            "<VTKFile type=\"ImageData\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\">"
        )?;
        writeln!(
            out,
            "  <ImageData WholeExtent=\"{extent}\" Origin=\"0 0 0\" Spacing=\"1 1 1\">"
        )?;
        writeln!(out, "    <Piece Extent=\"{extent}\">")?;
        writeln!(out, "      <PointData>")?;
        for array in arrays {
            write_array(out, array)?;
        }
        writeln!(out, "      </PointData>")?;
        writeln!(out, "    </Piece>")?;
        writeln!(out, "  </ImageData>")?;
        writeln!(out, "</VTKFile>")
    })
}

/// VTK's name of an element type.
fn vtk_type(ty: ScalarType) -> &'static str {
    match ty {
        ScalarType::Bool | ScalarType::U8 => "UInt8",
        ScalarType::I32 => "Int32",
        ScalarType::I64 => "Int64",
        // `f16`/`bf16` components are written widened (see `write_array`).
        ScalarType::F16 | ScalarType::Bf16 | ScalarType::F32 => "Float32",
        ScalarType::F64 => "Float64",
    }
}

fn write_array(out: &mut dyn Write, array: &VtiArray<'_>) -> io::Result<()> {
    // VTK has no 16-bit floats: `f16`/`bf16` components are written as `Float32`.
    let components: Vec<Cow<'_, Buffer>> = array.components.iter().map(|b| b.widened()).collect();
    let ty = components[0].ty();
    let size = ty.size_bytes();
    let points = components[0].len();
    let bytes_per_component: Vec<&[u8]> = components.iter().map(|b| b.as_bytes()).collect();
    let mut data = Vec::with_capacity(8 + points * size * array.components.len());
    data.extend_from_slice(&((points * size * array.components.len()) as u64).to_le_bytes());
    for point in 0..points {
        for bytes in &bytes_per_component {
            let element = &bytes[point * size..(point + 1) * size];
            if cfg!(target_endian = "big") {
                data.extend(element.iter().rev());
            } else {
                data.extend_from_slice(element);
            }
        }
    }
    writeln!(
        out,
        "        <DataArray type=\"{}\" Name=\"{}\" NumberOfComponents=\"{}\" format=\"binary\">",
        vtk_type(ty),
        xml_escape(array.name),
        array.components.len()
    )?;
    writeln!(out, "          {}", base64::encode(&data))?;
    writeln!(out, "        </DataArray>")
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The base64 payload of each `DataArray`, decoded, without its length header.
    fn payloads(text: &str) -> Vec<Vec<u8>> {
        let lines: Vec<&str> = text.lines().collect();
        lines
            .windows(2)
            .filter(|w| w[0].trim_start().starts_with("<DataArray"))
            .map(|w| {
                let bytes = base64::decode(w[1].trim());
                let len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
                assert_eq!(len, bytes.len() - 8);
                bytes[8..].to_vec()
            })
            .collect()
    }

    #[test]
    fn writes_a_2d_scalar_field_paraview_can_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("u.vti");
        let u = Buffer::F32(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0].into());
        write_vti(
            &path,
            &[2, 3],
            &[VtiArray {
                name: "u",
                components: vec![&u],
            }],
        )
        .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains("<ImageData WholeExtent=\"0 2 0 1 0 0\""),
            "{text}"
        );
        assert!(
            text.contains(
                "<DataArray type=\"Float32\" Name=\"u\" NumberOfComponents=\"1\" format=\"binary\">"
            ),
            "{text}"
        );
        assert_eq!(payloads(&text), vec![u.as_bytes().to_vec()]);
    }

    #[test]
    fn writes_3d_grids_and_interleaves_vector_components() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.vti");
        let (ex, ey) = (
            Buffer::I32((0..8).collect::<Vec<_>>().into()),
            Buffer::I32((100..108).collect::<Vec<_>>().into()),
        );
        let id = Buffer::U8(vec![7; 8].into());
        let arrays = [
            VtiArray {
                name: "E",
                components: vec![&ex, &ey],
            },
            VtiArray {
                name: "id",
                components: vec![&id],
            },
        ];
        write_vti(&path, &[2, 2, 2], &arrays).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("WholeExtent=\"0 1 0 1 0 1\""));
        assert!(text.contains("type=\"Int32\" Name=\"E\" NumberOfComponents=\"2\""));
        let data = payloads(&text);
        let e: Vec<i32> = data[0]
            .chunks(4)
            .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(&e[..6], &[0, 100, 1, 101, 2, 102]);
        assert_eq!(data[1], vec![7; 8]);
    }

    #[test]
    fn refuses_4d_grids_and_mixed_component_types() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.vti");
        let a = Buffer::F64(vec![0.0; 16].into());
        let err = write_vti(
            &path,
            &[2, 2, 2, 2],
            &[VtiArray {
                name: "a",
                components: vec![&a],
            }],
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "cannot write `a` to {}: VTK image data has 1 to 3 axes and the grid is 2x2x2x2; write .npy instead",
                path.display()
            )
        );
        let b = Buffer::F32(vec![0.0; 16].into());
        let err = write_vti(
            &path,
            &[16],
            &[VtiArray {
                name: "S",
                components: vec![&a, &b],
            }],
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("must share one element type"),
            "{err}"
        );
        assert!(!path.exists());
    }
}
