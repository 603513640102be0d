//! Integration tests of `stepscope-serving` on the shipped configs in `configs/`, on configs
//! derived from them in temp folders, and on the runtime-detection fixture trees. Shell
//! quoting is proven with the real `bash`; there is no docker engine here, so docker
//! commands are checked by letting bash split them, not by running them.

mod check;
mod collect;
mod common;
mod config_errors;
mod detect;
mod fingerprint;
mod profile;
mod render;
mod server;
mod windows;
