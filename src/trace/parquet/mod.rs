//! Parquet traces and events tables: a directory of part files, each written whole and
//! renamed into place.
//!
//! Leaf modules, bottom to top: [`arrays`] (the transitions columns as Arrow arrays), [`layout`] (part names, metadata keys, listing the parts),
//! [`pages`] (the column chunks the part thread encodes itself), [`schema`], [`thread`]
//! (when parts are cut and the thread that writes them), [`resume`] (a table cut back to a
//! checkpoint), [`writer`]; [`batch`] (a part's rows as typed columns) and [`reader`].

pub(crate) mod arrays;
pub(crate) mod batch;
pub(crate) mod layout;
pub(crate) mod pages;
pub(crate) mod reader;
pub(crate) mod resume;
pub(crate) mod schema;
pub(crate) mod thread;
pub(crate) mod writer;
