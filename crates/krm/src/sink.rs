//! Where output goes, piece by piece, so that it never has to be held whole.

/// A writer of output pieces: the command's buffered stdout, a host's string.
pub type Sink<'s> = dyn FnMut(&str) + 's;
