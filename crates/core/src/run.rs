//! One run of the function: the input read once, the configuration read once, the resources
//! the configuration brings along, reconciliation, and the output in the input's form.

use crate::config::{Config, ConfigError, Task, installed};
use crate::reconcile::{Output, Plan, Run, cut_unread, reconcile};
use crate::validate;
use krm::finding::{Finding, ResourceRef};
use krm::object::Object;
use krm::{self, Input, InputError, Item, Out};
use yaml::Limits;
use yaml::{Node, parse_stream};

/// How to run, besides the input itself.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// A functionConfig object (YAML or JSON) that replaces the one in the ResourceList.
    pub function_config: Option<String>,
    /// `key=value` settings applied over the functionConfig.
    pub overrides: Vec<String>,
    /// Bounds for the input and everything read from it.
    pub limits: Limits,
    /// The host's process ends right after this run (the command-line tool): the input's
    /// trees are then left for the operating system to take back with the process instead of
    /// being freed a node at a time (about 5 % of a large fleet's run). Hosts that run again
    /// in the same process (browsers, policy engines) leave it `false`.
    pub exits_after: bool,
    /// The host's time, in Unix seconds: certificates are checked against it (none checked
    /// without it). The core reads no clock; the host gives it, and tests pin it.
    pub now: Option<i64>,
    /// 32 random bytes from the host's operating system, seeding the generator sealing takes
    /// its keys from (`seal`); the core has no source of randomness. Tests pin them.
    pub random: Option<[u8; 32]>,
    /// The randomness was pinned (tests: `CAPI2ARGO_RANDOM`): sealing then says, as a warning,
    /// that its output must not be used.
    pub random_pinned: bool,
    /// The host listed from the API server itself what the settings read (the controller, after
    /// `read_set`): a kind absent from the input is absent there, not left out of a file, so the
    /// warnings that ask to read it too (an empty input, Secrets without Clusters, no
    /// ApplicationSet under `readApplications`) are not given.
    pub host_listed: bool,
}

/// Where the files a configuration names (`resourceFiles`) come from: the host reads them,
/// under its own rules; the core reads nothing itself.
pub trait Files {
    /// The bytes of `path` (relative to the working directory, checked to hold no `..`), at
    /// most `limit` of them; `Err` says why not.
    fn read(&mut self, path: &str, limit: usize) -> Result<Vec<u8>, String>;
}

/// No files at all: for hosts that have none to give (browsers, kpt's WASM runtime).
pub struct NoFiles;

impl Files for NoFiles {
    fn read(&mut self, path: &str, _limit: usize) -> Result<Vec<u8>, String> {
        Err(format!(
            "{path} cannot be read here (this host gives the function no files; the command-line tool reads them)"
        ))
    }
}

/// What a run produced. The output is complete even when there are error results.
#[derive(Debug)]
pub struct Outcome {
    /// The output ResourceList or YAML stream.
    pub output: String,
    /// Every result.
    pub results: Vec<Finding>,
    /// What happened to each Argo CD cluster Secret (none when the run only validated, or its
    /// configuration was unusable).
    pub plan: Option<Plan>,
}

/// What a run hands back besides its output.
#[derive(Debug)]
pub struct Finished {
    /// Every result, errors first, then warnings, then information.
    pub results: Vec<Finding>,
    /// What happened to each Argo CD cluster Secret (none when the run only validated, or its
    /// configuration was unusable).
    pub plan: Option<Plan>,
    /// The host that sent the input (whether it prints results itself).
    pub caller: krm::Caller,
}

impl Outcome {
    /// Whether an error result exists (the command exits 1 then).
    pub fn failed(&self) -> bool {
        krm::finding::failed(&self.results)
    }
}

/// Why a run could not start: nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The input is not YAML, not UTF-8, over a limit, or not a ResourceList, List or stream.
    #[error("{0}")]
    Input(#[from] InputError),
    /// The `--fn-config` file, a `--set` setting or a `resourceFiles` entry is unusable.
    #[error("{0}")]
    FunctionConfig(String),
}

/// Runs the function over one input.
pub fn run(input: &[u8], options: &Options) -> Result<Outcome, RunError> {
    let mut output = String::new();
    let finished = run_streaming(input, options, &mut NoFiles, &mut |s| output.push_str(s))?;
    Ok(Outcome {
        output,
        results: finished.results,
        plan: finished.plan,
    })
}

/// Makes the plan of a run without writing its output: what `capi2argo plan` shows. The
/// Secrets to write are kept as trees in the plan ([`Plan::show`] with `PlanFormat::Writes`).
pub fn plan(input: &[u8], options: &Options, files: &mut dyn Files) -> Result<Finished, RunError> {
    execute(input, options, files, Output::PlanOnly, &mut |_| {})
}

/// Runs the function, handing the output to `sink` piece by piece as it is written: nothing
/// the input already holds is copied, and the whole output never has to sit in memory. An
/// error before any output (unreadable input) means the sink was never called.
pub fn run_streaming(
    input: &[u8],
    options: &Options,
    files: &mut dyn Files,
    sink: &mut krm::Sink,
) -> Result<Finished, RunError> {
    execute(input, options, files, Output::Resources, sink)
}

fn execute(
    input: &[u8],
    options: &Options,
    files: &mut dyn Files,
    output: Output,
    sink: &mut krm::Sink,
) -> Result<Finished, RunError> {
    let mut parsed = krm::parse_reading(input, &options.limits, Some(cut_unread))?;
    let finished = execute_input(&mut parsed, options, files, output, None, sink);
    if options.exits_after {
        // The process ends with the run: freeing a large input tree node by node is time
        // spent for nothing.
        std::mem::forget(parsed);
    }
    finished
}

/// A run over an input already read: what [`plan`] does after reading its bytes, and what a
/// [`crate::Planner`] does with the objects it keeps.
pub(crate) fn execute_input(
    parsed: &mut Input,
    options: &Options,
    files: &mut dyn Files,
    output: Output,
    memory: Option<crate::reconcile::Memory<'_>>,
    sink: &mut krm::Sink,
) -> Result<Finished, RunError> {
    let limits = &options.limits;
    let caller = krm::caller(parsed);
    let override_doc = function_config_override(options)?;
    // Settings given on the command line are checked on their own: a mistake there is a usage error.
    if let Err(errors) = Config::from_parts(override_doc.as_ref(), &options.overrides, limits) {
        let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
        return Err(RunError::FunctionConfig(lines.join("\n")));
    }
    // Where no settings are given (`--fn-config`, a ResourceList's own), an installed
    // controller's, read beside the fleet, are taken: the plan then says what it will do.
    let installed = (override_doc.is_none() && parsed.function_config.is_none())
        .then(|| installed::find(&parsed.items))
        .flatten()
        .map(|found| (found.settings.clone().into_owned(), found.note));
    let fc = override_doc
        .as_ref()
        .or(parsed.function_config.as_ref())
        .or(installed.as_ref().map(|(settings, _)| settings));
    let config = match Config::from_parts(fc, &options.overrides, limits) {
        Ok(config) => config,
        Err(errors) => {
            let results = config_failure(parsed, fc, &errors, sink);
            return Ok(Finished {
                results,
                plan: None,
                caller,
            });
        }
    };
    // A config made of settings alone (no name: `--set`, a host's config object) is no resource
    // to name in a result.
    let fc_ref = fc
        .map(|n| Object::new(n).resource_ref())
        .filter(|r| !r.name.is_empty());
    if config.task == Task::Validate {
        let policy = config.validation_policy();
        let results = validate::validate_input(
            parsed,
            &policy,
            options.now,
            fc_ref,
            (
                &crate::seal::validate_sealed,
                &crate::access::recorded_token,
            ),
            sink,
        );
        return Ok(Finished {
            results,
            plan: None,
            caller,
        });
    }
    // Randomness that is all zeros is a host that gave none (glue that filled nothing).
    let random = options.random.filter(|r| r.iter().any(|b| *b != 0));
    if let Err(error) = config.check_sealing(options.now, random.is_some()) {
        let results = config_failure(parsed, fc, &[error], sink);
        return Ok(Finished {
            results,
            plan: None,
            caller,
        });
    }
    slim(&mut parsed.items);
    parsed.items.extend(extra_sources(&config, files, limits)?);
    let notes = installed
        .map(|(_, note)| vec![Finding::info(note).on(fc_ref.clone(), None)])
        .unwrap_or_default();
    let run = Run {
        limits,
        notes,
        function_config: fc_ref,
        now: options.now,
        output,
        host_listed: options.host_listed,
        random,
        random_pinned: options.random_pinned,
        memory,
    };
    let reconciled = reconcile(parsed, &config, run, sink);
    Ok(Finished {
        results: reconciled.results,
        plan: Some(reconciled.plan),
        caller,
    })
}

pub(crate) fn function_config_override(options: &Options) -> Result<Option<Node<'_>>, RunError> {
    let Some(text) = &options.function_config else {
        return Ok(None);
    };
    let docs = parse_stream(text, &options.limits)
        .map_err(|e| RunError::FunctionConfig(format!("function config: {e}")))?;
    docs.into_iter()
        .next()
        .map(|d| Some(d.root))
        .ok_or_else(|| RunError::FunctionConfig("function config is empty".into()))
}

/// Items copied verbatim give up what the function never reads of them (a ResourceList's are
/// cut while it is read; this is for the other forms).
pub(crate) fn slim(items: &mut [Item]) {
    for item in items
        .iter_mut()
        .filter(|i| !matches!(i.text, krm::Text::Rewrite(_)))
    {
        cut_unread(&mut item.node);
    }
}

/// Resources the config brings along (`resources`, `resourceFiles`): read and converted, never emitted.
fn extra_sources(
    config: &Config,
    files: &mut dyn Files,
    limits: &Limits,
) -> Result<Vec<Item<'static>>, RunError> {
    let mut items: Vec<Item<'static>> = config
        .resources
        .iter()
        .map(|node| Item::generated(node.clone(), true))
        .collect();
    let mut read = std::collections::HashSet::new();
    // Each file once, however often the list names it.
    for path in config
        .resource_files
        .iter()
        .filter(|p| read.insert(p.as_str()))
    {
        let bytes = files
            .read(path, limits.max_input_bytes)
            .map_err(|e| RunError::FunctionConfig(format!("resourceFiles: {e}")))?;
        let input = krm::parse(&bytes, limits)
            .map_err(|e| RunError::FunctionConfig(format!("resourceFiles: {path}: {e}")))?;
        items.extend(
            input
                .items
                .into_iter()
                .map(|item| Item::generated(item.node.into_owned(), true)),
        );
    }
    Ok(items)
}

/// A bad configuration converts nothing and loses nothing: every item goes out as it came,
/// with one result for each mistake.
fn config_failure(
    input: &Input,
    fc: Option<&Node>,
    errors: &[ConfigError],
    sink: &mut krm::Sink,
) -> Vec<Finding> {
    let resource: Option<ResourceRef> = fc.map(|fc| Object::new(fc).resource_ref());
    let results: Vec<Finding> = errors
        .iter()
        .map(|error| {
            let finding = match error {
                // A setting given on top is not the functionConfig's.
                ConfigError::UnknownSetting { .. } | ConfigError::BadSetting { .. } => {
                    Finding::error(error.to_string())
                }
                _ => Finding::error(format!("functionConfig: {}", error.detail()))
                    .on(resource.clone(), None),
            };
            match error.field() {
                Some(field) => finding.at(field),
                None => finding,
            }
        })
        .collect();
    let items: Vec<Out> = input.items.iter().map(Out::Keep).collect();
    krm::render(input, &items, &krm::TextStore::default(), &results, sink);
    results
}
