//! Application names as the ApplicationSet controller renders them (applicationset/utils/utils.go,
//! `Render.Replace`): fasttemplate's `{{param}}` substitution, or a Go template, of which the
//! plain substitutions are computed here — field chains (`.name`, `.metadata.labels.env`),
//! `index` with literal keys, and a few pure string functions (`lower`, `upper`, `trim`,
//! `trimPrefix`, `trimSuffix`, `replace`, `trunc`, Argo CD's `normalize`). Anything else is said
//! to be beyond what a plan can compute, never guessed.
//!
//! A template's text is read ([`parse`]) into its parts ([`syntax`]), which are rendered for a
//! parameter set ([`render`]) and asked which parameters they read ([`reads`]).

mod parse;
mod reads;
mod render;
mod syntax;

pub use render::{Rendered, sanitize_name};
pub use syntax::{Syntax, Template};
