//! The application layer under the command line and the Python package: what a caller asks
//! `analyze` for, as typed values, without clap. The commands turn their flags into these
//! requests, the Python package its keyword arguments; both then run the same code
//! ([`crate::api::analyze`], the `analyze` command), so a notebook and a pipeline cannot
//! disagree. How results are shown (JSON or tables, colour, progress) stays in the commands.

mod errors;
mod request;

pub use errors::{hinted, message_and_hint};
pub use request::{
    AnalyzeRequest, CategoryTable, DiffRequest, EnvRequest, Gate, Outputs, Reading, RequestError,
};
