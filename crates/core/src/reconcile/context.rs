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
}

impl<'x, 'a> Ctx<'x, 'a> {
    pub fn item(&self, index: usize) -> &'x Item<'a> {
        &self.input.items[index]
    }

    pub fn object(&self, index: usize) -> Object<'x, 'a> {
        Object::new(&self.item(index).node)
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
