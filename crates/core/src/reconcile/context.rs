//! What every step of reconciliation shares: the context it reads (the input, the settings, the
//! limits, the host's time) and reports its results to, and whether the output is written.

use krm::finding::{Finding, ResourceRef, Severity};
use krm::object::Object;
use krm::{Input, Item};
use yaml::Limits;

use crate::config::Config;

use super::outcome::Outcomes;

/// Whether the output is written, or only the plan made (for `capi2argo plan`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// The output goes to the sink.
    Resources,
    /// Nothing goes to the sink; the plan keeps the new Secrets as trees, to be shown.
    PlanOnly,
}

/// What every step reads (the input, the settings) and where results go.
pub(super) struct Ctx<'x, 'a> {
    pub input: &'x Input<'a>,
    pub config: &'x Config,
    pub limits: &'x Limits,
    pub function_config: Option<ResourceRef>,
    pub now: Option<i64>,
    pub results: Vec<Finding>,
    /// What becomes of each cluster, as the steps decide it.
    pub outcomes: Outcomes,
    /// The input holds ApplicationSets or Applications: each new Secret is kept as they see it.
    pub judges_applications: bool,
    /// Seals the Secrets written, when `seal` is on.
    pub sealer: Option<crate::seal::Sealer>,
    /// `serviceAccountRole: impersonate`: Argo CD's AppProjects and whether it impersonates,
    /// and whether the host listed them itself (absent is then absent).
    pub projects: Option<(crate::projects::Projects, bool)>,
    /// Certificates read in earlier plans, when the host keeps a planner.
    pub certificates: Option<&'x crate::validate::tls::Memo>,
    /// Conversions made in earlier plans, and each input item's stamp, when the host keeps a
    /// planner.
    pub conversions: Option<(&'x super::ConversionMemo, &'x [u64])>,
    /// Whether each input item's metadata was found sound when the host kept it (a planner):
    /// the scan walks only the others.
    pub sound: Option<&'x [bool]>,
    /// The first time after the host's at which what was said since it was last cleared may
    /// change (a certificate comes near its end, a token is to be renewed); `None`: never.
    pub until: Option<i64>,
}

impl<'x, 'a> Ctx<'x, 'a> {
    pub fn item(&self, index: usize) -> &'x Item<'a> {
        &self.input.items[index]
    }

    pub fn object(&self, index: usize) -> Object<'x, 'a> {
        Object::new(&self.item(index).node)
    }

    /// What was said holds only until `at`, if that is sooner.
    pub fn holds_until(&mut self, at: Option<i64>) {
        self.until = match (self.until, at) {
            (Some(until), Some(at)) => Some(until.min(at)),
            (until, at) => until.or(at),
        };
    }

    /// A result about input item `index`.
    pub fn report(
        &mut self,
        index: usize,
        severity: Severity,
        field: Option<&str>,
        message: String,
    ) {
        let object = self.object(index);
        let mut finding = object.finding(Finding::new(severity, message));
        if let Some(field) = field {
            finding = finding.at(field);
        }
        self.results.push(finding);
    }

    /// A result about the configuration (the functionConfig, when there is one).
    pub fn report_config(&mut self, severity: Severity, field: Option<String>, message: String) {
        let mut finding = Finding::new(severity, message).on(self.function_config.clone(), None);
        if let Some(field) = field {
            finding = finding.at(field);
        }
        self.results.push(finding);
    }
}
