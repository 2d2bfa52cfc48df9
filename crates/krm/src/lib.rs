//! KRM input and output: the forms a function receives (ResourceList, List, YAML stream), what
//! of each item can be copied verbatim, and the output written in the input's form.

#![warn(missing_docs)]

pub mod b64;
pub mod caller;
pub mod finding;
pub mod input;
pub mod object;
pub mod render;
pub mod secret;
pub mod sink;
pub mod store;
pub mod verbatim;

pub use caller::{Caller, caller};
pub use input::{Form, Input, InputError, Item, NAMING_KEYS, parse, parse_reading};
pub use render::{Out, failure_resource_list, render};
pub use secret::{Preconditions, Secret};
pub use sink::Sink;
pub use store::TextStore;
pub use verbatim::Text;
