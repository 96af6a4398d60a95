//! `From` conversions that wrap a lower layer's error as one variant of a layer's error.

/// Implements `From<Source> for Error` for each `Source => Variant`, wrapping the source
/// whole as `Error::Variant(source)`: the conversions `?` makes between layers, so the
/// typed source travels with the error.
macro_rules! wrap_errors {
    ($error:ident { $($source:ty => $variant:ident),+ $(,)? }) => {
        $(
            impl From<$source> for $error {
                fn from(e: $source) -> Self {
                    $error::$variant(e)
                }
            }
        )+
    };
}

pub(crate) use wrap_errors;
