//! The command line: the flags, the subcommands and the settings `--help` lists, parsed by
//! clap into what the host driver takes. Only the command parses arguments; the library never does.

use std::path::PathBuf;

use capi2argo_core::{Limits, Options, PlanFormat};
use clap::{CommandFactory, FromArgMatches, Parser};

/// What `--version` prints after the name: the package version and the commit the build came
/// from, with its date when git told the build script (build.rs): `0.1.0 (abc1234 2026-11-24)`,
/// `0.1.0 (abc1234)` from a packaged crate, `0.1.0 (commit unknown)`.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("CAPI2ARGO_BUILD_COMMIT"),
    ")"
);

/// Turns Cluster API kubeconfig Secrets into Argo CD cluster Secrets.
///
/// Reads a KRM ResourceList (as kpt and kustomize send it), a `kind: List` (`kubectl get -o yaml`),
/// or a multi-document YAML stream, from FILE or standard input. A ResourceList comes back as a
/// ResourceList with results; anything else as a YAML stream, with results on standard error.
///
/// Exit codes: 0 success (warnings possible), 1 error results (the full output is still written),
/// 2 unusable input or arguments (nothing written).
#[derive(Parser, Debug, Clone)]
#[command(name = "capi2argo", version = VERSION, about, long_about)]
pub struct Args {
    /// Input file; standard input when absent or `-`.
    pub input: Option<PathBuf>,

    /// What to do instead of converting.
    #[command(subcommand)]
    pub command: Option<Command>,

    /// A functionConfig file (ConfigMap or Capi2Argo) replacing the ResourceList's own.
    #[arg(long, value_name = "FILE", global = true)]
    pub fn_config: Option<PathBuf>,

    /// A setting as key=value (for example namespacedNames=true); repeatable, applied last.
    /// Every setting is listed below.
    #[arg(long = "set", value_name = "KEY=VALUE", global = true)]
    pub set: Vec<String>,

    /// Largest input accepted, in bytes (files named by resourceFiles too, each and together).
    #[arg(long, global = true, value_name = "BYTES", default_value_t = Limits::default().max_input_bytes)]
    pub max_input_bytes: usize,

    /// Deepest YAML nesting accepted.
    #[arg(long, global = true, value_name = "LEVELS", default_value_t = Limits::default().max_depth)]
    pub max_depth: usize,

    /// Most YAML nodes in one parse, aliases expanded.
    #[arg(long, global = true, value_name = "NODES", default_value_t = Limits::default().max_nodes)]
    pub max_nodes: usize,

    /// Most YAML nodes aliases may add in one parse, 64 bytes of text counting as one (billion-laughs guard).
    #[arg(long, global = true, value_name = "NODES", default_value_t = Limits::default().max_alias_nodes)]
    pub max_alias_nodes: usize,

    /// Most resources in one input.
    #[arg(long, global = true, value_name = "COUNT", default_value_t = Limits::default().max_items)]
    pub max_items: usize,
}

/// What to do instead of converting.
#[derive(clap::Subcommand, Debug, Clone)]
pub enum Command {
    /// Shows what a conversion would do to each Argo CD cluster Secret (create, update with the
    /// changed keys, rename, prune, kept and why, unchanged) after the guards, and writes nothing
    /// else; never a secret value. Exit codes as a conversion's.
    Plan {
        /// Input file; standard input when absent or `-`.
        input: Option<PathBuf>,
        /// `text` for people; `json` for tools; `requests`: the API requests that carry the plan
        /// out, one per line (`VERB PATH BODY`, for `kubectl VERB --raw PATH -f -`), each
        /// conditional on what was read.
        #[arg(short, long, value_enum, default_value_t = PlanOutput::Text)]
        output: PlanOutput,
    },
    /// Checks the Argo CD cluster Secrets in the input against Argo CD's own rules and the
    /// policy settings (`action=validate`); prints the input unchanged, exit 1 on an error.
    Validate {
        /// Input file; standard input when absent or `-`.
        input: Option<PathBuf>,
        /// Print the findings and a summary line on standard output instead of the input, whose
        /// Secrets hold credentials (for a terminal; a kpt validator keeps the default).
        #[arg(long)]
        findings: bool,
    },
    /// Puts a bare kubeconfig (`kubectl config view --raw`, YAML or JSON) into the Secret Cluster
    /// API would write for its cluster, named after the cluster entry its context uses, in
    /// namespace `default`: `capi2argo wrap kubeconfig.yaml | capi2argo` converts it. Exit 2 when
    /// the input is not one kubeconfig.
    Wrap {
        /// Input file; standard input when absent or `-`.
        input: Option<PathBuf>,
    },
}

/// How `capi2argo plan` shows the plan.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanOutput {
    /// One line per Argo CD cluster Secret, and a summary line.
    Text,
    /// One JSON object.
    Json,
    /// The API requests that carry the plan out (`VERB PATH BODY` lines).
    Requests,
}

impl PlanOutput {
    /// The core's name for the format.
    pub fn format(self) -> PlanFormat {
        match self {
            PlanOutput::Text => PlanFormat::Text,
            PlanOutput::Json => PlanFormat::Json,
            PlanOutput::Requests => PlanFormat::Requests,
        }
    }
}

impl Args {
    /// The input file, given before or after the subcommand.
    pub fn input_path(&self) -> Option<&std::path::Path> {
        match &self.command {
            Some(Command::Validate {
                input: Some(path), ..
            })
            | Some(Command::Wrap { input: Some(path) })
            | Some(Command::Plan {
                input: Some(path), ..
            }) => Some(path),
            _ => self.input.as_deref(),
        }
    }

    /// Whether the command is `validate --findings`: no input echoed, findings and a summary.
    pub fn findings_only(&self) -> bool {
        matches!(self.command, Some(Command::Validate { findings: true, .. }))
    }

    /// Whether the command is `wrap`.
    pub fn wraps(&self) -> bool {
        matches!(self.command, Some(Command::Wrap { .. }))
    }

    /// The plan's format, when the command is `plan`.
    pub fn plan_format(&self) -> Option<PlanFormat> {
        match &self.command {
            Some(Command::Plan { output, .. }) => Some(output.format()),
            _ => None,
        }
    }

    /// Parses command-line arguments (the program name first), `--help` listing every setting.
    pub fn try_parse_from<I, T>(argv: I) -> Result<Args, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let matches = Self::command()
            .after_long_help(capi2argo_core::settings_help())
            .after_help("Settings: see --help for every key the function reads.")
            .try_get_matches_from(argv)?;
        Args::from_arg_matches(&matches)
    }

    /// The resource limits these arguments set.
    pub fn limits(&self) -> Limits {
        Limits {
            max_input_bytes: self.max_input_bytes,
            max_depth: self.max_depth,
            max_nodes: self.max_nodes,
            max_alias_nodes: self.max_alias_nodes,
            max_items: self.max_items,
        }
    }

    /// The options these arguments ask for, given the text of `--fn-config` (read by the host).
    pub fn options(&self, function_config: Option<String>) -> Options {
        let mut overrides = self.set.clone();
        if matches!(self.command, Some(Command::Validate { .. })) {
            overrides.push("action=validate".into());
        }
        Options {
            function_config,
            overrides,
            limits: self.limits(),
            exits_after: false,
            now: None,
            ..Options::default()
        }
    }
}
