//! Field values from and to files, by format: `.npy` (a scalar field, or a struct or vector
//! field as one array with a trailing component axis), `.png` (pictures; grey `u8` input) and
//! `.vti` (VTK image data, scalar or vector fields).

use std::path::Path;

use tessera_io::{PngSummary, VtiArray};
use tessera_runtime::{Buffer, FieldSet, ReceiverSeries};

use crate::error::Error;
use crate::session::{FieldRef, Session};

/// A field file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// NumPy `.npy`.
    Npy,
    /// PNG picture.
    Png,
    /// VTK XML image data.
    Vti,
}

impl Format {
    /// The format of `path`, from its extension.
    pub fn of(path: &Path) -> Result<Format, Error> {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("npy") => Ok(Format::Npy),
            Some("png") => Ok(Format::Png),
            Some("vti") => Ok(Format::Vti),
            _ => Err(Error::Usage(format!(
                "cannot tell the format of {} from its name; use a .npy, .png or .vti file",
                path.display()
            ))),
        }
    }
}

/// Checks that `field`, read from the PNG file `path`, is a scalar field, or says which
/// component to name.
fn single_component(field: &FieldRef, path: &Path) -> Result<(), Error> {
    match field.components.as_slice() {
        [_] => Ok(()),
        _ => Err(Error::Usage(format!(
            "`{}` has {} components and a PNG file holds one; name a component, e.g. `--input {}.x={}`",
            field.name,
            field.components.len(),
            field.name,
            path.display()
        ))),
    }
}

/// Reads `path` (`.npy`, or `.png` for scalar `u8` fields) into `field` of `fields`, checking
/// shape and type against the program.
pub fn read_into(
    session: &Session,
    fields: &mut FieldSet,
    field: &FieldRef,
    path: &Path,
) -> Result<(), Error> {
    let shape = &session.bound().extents;
    let format = Format::of(path)?;
    let buffers = match format {
        Format::Npy => tessera_io::read_npy_components(path, &field.name, &field.types, shape)?,
        Format::Png => {
            single_component(field, path)?;
            vec![tessera_io::read_png(
                path,
                &field.name,
                field.types[0],
                shape,
            )?]
        }
        Format::Vti => {
            return Err(Error::Usage(format!(
                "cannot read {}: .vti is an output format; give .npy or .png",
                path.display()
            )));
        }
    };
    for (&index, buffer) in field.components.iter().zip(buffers) {
        fields.buffers[index] = buffer;
    }
    Ok(())
}

/// Reads input table `table` (a table index) from the `.npy` file `path`: a 1D array of the
/// table's element type.
pub fn read_table(session: &Session, table: usize, path: &Path) -> Result<Buffer, Error> {
    let table = &session.program().tables[tessera_ir::Id::from_index(table)];
    match Format::of(path)? {
        Format::Npy => Ok(tessera_io::read_npy_table(path, &table.name, table.ty)?),
        _ => Err(Error::Usage(format!(
            "cannot read the table `{}` from {}: give a .npy file",
            table.name,
            path.display()
        ))),
    }
}

/// Writes `field` of `fields` to `path` in `format` (atomically); PNG writes say what they drew.
pub fn write_field(
    session: &Session,
    fields: &FieldSet,
    field: &FieldRef,
    format: Format,
    path: &Path,
) -> Result<Option<PngSummary>, Error> {
    let shape = &session.bound().extents;
    let components: Vec<&Buffer> = field.components.iter().map(|&i| fields.buffer(i)).collect();
    match format {
        Format::Npy => {
            tessera_io::write_npy_components(path, &field.name, &components, shape)?;
            Ok(None)
        }
        Format::Png => Ok(Some(tessera_io::write_png(
            path,
            &field.name,
            &components,
            shape,
        )?)),
        Format::Vti => {
            tessera_io::write_vti(
                path,
                shape,
                &[VtiArray {
                    name: &field.name,
                    components,
                }],
            )?;
            Ok(None)
        }
    }
}

/// Checks before any computation that `field` can be written to `path` in `format` on the
/// grid of `session`: the format holds the field and the grid, and the file's directory exists.
pub fn check_output(
    session: &Session,
    field: &FieldRef,
    format: Format,
    path: &Path,
) -> Result<(), Error> {
    let shape = &session.bound().extents;
    match format {
        Format::Npy => {
            tessera_io::npy::common_type(path, &field.name, &field.types)?;
        }
        Format::Png => tessera_io::check_png(path, &field.name, &field.types, shape)?,
        Format::Vti => tessera_io::check_vti(path, shape, &[(&field.name, &field.types)])?,
    }
    check_destination(path)
}

/// Checks that `path` can be created: its directory exists and it is not a directory.
pub fn check_destination(path: &Path) -> Result<(), Error> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    if dir.is_dir() && !path.is_dir() {
        Ok(())
    } else if path.is_dir() {
        Err(Error::Usage(format!(
            "cannot write {}: it is a directory; give a file name",
            path.display()
        )))
    } else {
        Err(Error::Usage(format!(
            "cannot write {}: the directory {} does not exist",
            path.display(),
            dir.display()
        )))
    }
}

/// A receiver's output file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeriesFormat {
    /// NumPy `.npy`: shape `(recordings, points)` in the field's type.
    Npy,
    /// `.csv`: `step,point,<axes>,value`, one row per point and recording.
    Csv,
}

impl SeriesFormat {
    /// The format of `path`, the output of receiver `name`, from its extension.
    pub fn of(path: &Path, name: &str) -> Result<SeriesFormat, Error> {
        match (path.extension().and_then(|e| e.to_str()))
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("npy") => Ok(SeriesFormat::Npy),
            Some("csv") => Ok(SeriesFormat::Csv),
            _ => Err(Error::Usage(format!(
                "cannot write the receiver `{name}` to {}: give a .npy file (shape (recordings, points)) or a .csv file",
                path.display()
            ))),
        }
    }
}

/// Reads the points of receiver `receiver` (a receiver index) from the `.npy` file `path`: an
/// integer array of shape `(n, dims)`.
pub fn read_points(
    session: &Session,
    receiver: usize,
    path: &Path,
) -> Result<Vec<Vec<i64>>, Error> {
    let receiver = &session.program().receivers[tessera_ir::Id::from_index(receiver)];
    match Format::of(path)? {
        Format::Npy => Ok(tessera_io::read_npy_points(
            path,
            &receiver.name,
            session.program().dims(),
        )?),
        _ => Err(Error::Usage(format!(
            "cannot read the points of the receiver `{}` from {}: give a .npy file of integers of shape (n, {})",
            receiver.name,
            path.display(),
            session.program().dims()
        ))),
    }
}

/// Writes a receiver's `series` (recorded at `points`) to `path` in `format`, atomically.
pub fn write_series(
    session: &Session,
    series: &ReceiverSeries,
    points: &[Vec<i64>],
    format: SeriesFormat,
    path: &Path,
) -> Result<(), Error> {
    match format {
        SeriesFormat::Npy => {
            let shape = [series.steps.len(), series.points];
            Ok(tessera_io::write_npy(path, &series.values, &shape)?)
        }
        SeriesFormat::Csv => Ok(tessera_io::write_text(
            path,
            &series_csv(session, series, points),
        )?),
    }
}

/// `step,point,y,x,value` then one row per point of each recording.
fn series_csv(session: &Session, series: &ReceiverSeries, points: &[Vec<i64>]) -> String {
    let axes = session.program().axis_names().join(",");
    let mut text = format!("step,point,{axes},value\n");
    for (row, step) in series.steps.iter().enumerate() {
        for (k, point) in points.iter().enumerate().take(series.points) {
            let coords: Vec<String> = point.iter().map(i64::to_string).collect();
            let value = element_text(&series.values, row * series.points + k);
            text.push_str(&format!("{step},{k},{},{value}\n", coords.join(",")));
        }
    }
    text
}

/// Element `i` of `buffer` exactly, in the shortest form that reads back to the same value
/// of its type (`f16`/`bf16` as their `f32` values).
pub fn element_text(buffer: &Buffer, i: usize) -> String {
    match buffer {
        Buffer::U8(v) => v[i].to_string(),
        Buffer::I32(v) => v[i].to_string(),
        Buffer::I64(v) => v[i].to_string(),
        Buffer::F16(_) | Buffer::Bf16(_) => format!("{:?}", buffer.get_f64(i) as f32),
        Buffer::F32(v) => format!("{:?}", v[i]),
        Buffer::F64(v) => format!("{:?}", v[i]),
    }
}
