//! Kubernetes label selectors as apimachinery builds and matches them
//! (`metav1.LabelSelectorAsSelector`, `labels.NewRequirement`, `Requirement.Matches`): what a
//! cluster generator's `selector` and a generator's post-selector select.

// Private to the library; the `internals` facade shows parts of it to this crate's own tests,
// which need no documentation of every item.
#![cfg_attr(feature = "internals", allow(missing_docs))]

use thiserror::Error;

use crate::convert::meta::{check_label_value, check_qualified_name};
use yaml::Node;

/// One requirement's operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    /// `matchLabels` (`selection.Equals`): present, with this value.
    Equals,
    /// `In`: present, with one of the values.
    In,
    /// `NotIn`: absent, or with none of the values.
    NotIn,
    /// `Exists`: present, whatever its value.
    Exists,
    /// `DoesNotExist`: absent.
    DoesNotExist,
}

/// A requirement on one label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub key: String,
    pub operator: Operator,
    pub values: Vec<String>,
}

/// A selector that apimachinery would refuse: Argo CD then generates nothing for the
/// ApplicationSet, and deletes nothing either.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SelectorError {
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
}

fn invalid(field: impl Into<String>, message: impl Into<String>) -> SelectorError {
    SelectorError::Invalid {
        field: field.into(),
        message: message.into(),
    }
}

/// A label selector: every requirement must hold. No requirement selects everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    pub requirements: Vec<Requirement>,
}

impl Selector {
    /// Reads a `metav1.LabelSelector` (`matchLabels`, `matchExpressions`) as apimachinery does,
    /// refusing what it refuses: a key that is no qualified name, a value that is no label value,
    /// an unknown operator, values for `Exists`/`DoesNotExist`, none for `In`/`NotIn`. `field` is
    /// where the selector stands, for the error. A generator's post-selector (Argo CD's own copy
    /// of the rules, applicationset/utils/selector.go) checks keys but not values: `values: false`.
    pub fn read(node: Option<&Node>, field: &str, values: bool) -> Result<Selector, SelectorError> {
        let mut selector = Selector::default();
        let Some(node) = node.filter(|n| !n.is_null()) else {
            return Ok(selector);
        };
        if node.as_map().is_none() {
            return Err(invalid(
                field,
                format!("expected a mapping, got {}", node.type_name()),
            ));
        }
        if let Some(labels) = node.get("matchLabels").filter(|n| !n.is_null()) {
            let entries = labels.as_map().ok_or_else(|| {
                invalid(
                    format!("{field}.matchLabels"),
                    format!("expected a mapping, got {}", labels.type_name()),
                )
            })?;
            for (k, v) in entries {
                let key = k.scalar().map(|s| s.text.to_string()).unwrap_or_default();
                let at = format!("{field}.matchLabels.{key}");
                let value = scalar_text(v).ok_or_else(|| invalid(&at, "expected a string"))?;
                selector.push(&at, key, Operator::Equals, vec![value], values)?;
            }
        }
        if let Some(expressions) = node.get("matchExpressions").filter(|n| !n.is_null()) {
            let items = expressions.as_seq().ok_or_else(|| {
                invalid(
                    format!("{field}.matchExpressions"),
                    format!("expected a list, got {}", expressions.type_name()),
                )
            })?;
            for (i, e) in items.iter().enumerate() {
                let at = format!("{field}.matchExpressions[{i}]");
                let key = e.get("key").and_then(scalar_text).unwrap_or_default();
                let operator = match e.get("operator").and_then(scalar_text).as_deref() {
                    Some("In") => Operator::In,
                    Some("NotIn") => Operator::NotIn,
                    Some("Exists") => Operator::Exists,
                    Some("DoesNotExist") => Operator::DoesNotExist,
                    other => {
                        return Err(invalid(
                            format!("{at}.operator"),
                            format!(
                                "{:?} is not a valid label selector operator",
                                other.unwrap_or_default()
                            ),
                        ));
                    }
                };
                let check = values;
                let values = match e.get("values").filter(|n| !n.is_null()) {
                    None => Vec::new(),
                    Some(v) => v
                        .as_seq()
                        .ok_or_else(|| invalid(format!("{at}.values"), "expected a list"))?
                        .iter()
                        .map(|v| scalar_text(v).unwrap_or_default())
                        .collect(),
                };
                selector.push(&at, key, operator, values, check)?;
            }
        }
        Ok(selector)
    }

    /// Adds a requirement as `labels.NewRequirement` checks it.
    fn push(
        &mut self,
        at: &str,
        key: String,
        operator: Operator,
        values: Vec<String>,
        check_values: bool,
    ) -> Result<(), SelectorError> {
        check_qualified_name(&key).map_err(|m| invalid(at, m))?;
        match operator {
            Operator::In | Operator::NotIn if values.is_empty() => {
                return Err(invalid(
                    at,
                    "for 'in', 'notin' operators, values set can't be empty",
                ));
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                return Err(invalid(
                    at,
                    "values set must be empty for exists and does not exist",
                ));
            }
            _ => {}
        }
        for value in values.iter().filter(|_| check_values) {
            check_label_value(value).map_err(|m| invalid(at, m))?;
        }
        self.requirements.push(Requirement {
            key,
            operator,
            values,
        });
        Ok(())
    }

    /// Whether no requirement is written: the selector selects everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// `metav1.AddLabelToSelector`: `key` must equal `value`, whatever `matchLabels` said of
    /// `key` before (the cluster generator adds `argocd.argoproj.io/secret-type: cluster` so).
    pub fn with_label(mut self, key: &str, value: &str) -> Selector {
        self.requirements
            .retain(|r| !(r.key == key && r.operator == Operator::Equals));
        self.requirements.push(Requirement {
            key: key.to_string(),
            operator: Operator::Equals,
            values: vec![value.to_string()],
        });
        self
    }

    /// Whether labels (`get` gives a label's value) satisfy every requirement.
    pub fn matches<'l>(&self, get: impl Fn(&str) -> Option<&'l str>) -> bool {
        self.requirements.iter().all(|r| r.matches(get(&r.key)))
    }

    /// Whether labels satisfy every requirement, where `get` may not know a label (`Err`): the
    /// answer is then `None` unless a known requirement already fails.
    pub fn matches_partly<'l>(
        &self,
        get: impl Fn(&str) -> Result<Option<&'l str>, ()>,
    ) -> Option<bool> {
        let mut known = true;
        for r in &self.requirements {
            match get(&r.key) {
                Ok(value) if !r.matches(value) => return Some(false),
                Ok(_) => {}
                Err(()) => known = false,
            }
        }
        known.then_some(true)
    }
}

impl Requirement {
    /// `Requirement.Matches` for a label that has `value` (`None`: absent).
    pub fn matches(&self, value: Option<&str>) -> bool {
        let listed = |v: &str| self.values.iter().any(|x| x == v);
        match self.operator {
            Operator::Equals | Operator::In => value.is_some_and(listed),
            Operator::NotIn => !value.is_some_and(listed),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
        }
    }
}

/// A scalar's text, whatever YAML type it reads as (a selector's values are strings to the API
/// server; the CRD's schema refuses anything else before Argo CD sees it).
fn scalar_text(node: &Node) -> Option<String> {
    node.scalar().map(|s| s.text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use yaml::Limits;
    use yaml::parse_stream;

    fn selector(yaml: &str) -> Result<Selector, SelectorError> {
        let docs = parse_stream(yaml, &Limits::default()).expect("yaml");
        Selector::read(Some(&docs[0].root), "selector", true)
    }

    fn labels<'l>(pairs: &'l [(&'l str, &'l str)]) -> impl Fn(&str) -> Option<&'l str> {
        move |k| pairs.iter().find(|(key, _)| *key == k).map(|(_, v)| *v)
    }

    #[test]
    fn match_labels_and_expressions_all_hold() {
        let s = selector(
            "matchLabels: {env: prod}\nmatchExpressions:\n- {key: region, operator: In, values: [eu, us]}\n- {key: legacy, operator: DoesNotExist}\n",
        )
        .unwrap();
        assert!(s.matches(labels(&[("env", "prod"), ("region", "eu")])));
        assert!(!s.matches(labels(&[("env", "prod"), ("region", "ap")])));
        assert!(!s.matches(labels(&[("env", "prod"), ("region", "eu"), ("legacy", "")])));
        assert!(!s.matches(labels(&[("region", "eu")])));
    }

    #[test]
    fn not_in_holds_for_an_absent_label() {
        let s =
            selector("matchExpressions:\n- {key: env, operator: NotIn, values: [prod]}\n").unwrap();
        assert!(s.matches(labels(&[])));
        assert!(s.matches(labels(&[("env", "dev")])));
        assert!(!s.matches(labels(&[("env", "prod")])));
    }

    #[test]
    fn apimachinery_refusals_are_errors() {
        for (yaml, said) in [
            (
                "matchExpressions:\n- {key: env, operator: Equals, values: [a]}\n",
                "not a valid label selector operator",
            ),
            (
                "matchExpressions:\n- {key: env, operator: In}\n",
                "values set can't be empty",
            ),
            (
                "matchExpressions:\n- {key: env, operator: Exists, values: [a]}\n",
                "must be empty",
            ),
            (
                "matchLabels: {'bad key!': a}\n",
                "not a valid label or annotation key",
            ),
            ("matchLabels: {env: 'a b'}\n", "not a valid label value"),
        ] {
            let err = selector(yaml).unwrap_err().to_string();
            assert!(err.contains(said), "{yaml}: {err}");
        }
    }

    #[test]
    fn the_secret_type_label_replaces_what_match_labels_said_of_it() {
        let s = selector("matchLabels: {argocd.argoproj.io/secret-type: other}\n")
            .unwrap()
            .with_label("argocd.argoproj.io/secret-type", "cluster");
        assert!(s.matches(labels(&[("argocd.argoproj.io/secret-type", "cluster")])));
        assert!(!s.matches(labels(&[("argocd.argoproj.io/secret-type", "other")])));
    }

    #[test]
    fn an_unknown_label_leaves_the_answer_open_unless_another_fails() {
        let s = selector("matchLabels: {a: x, b: y}\n").unwrap();
        let unknown_b = |k: &str| if k == "a" { Ok(Some("x")) } else { Err(()) };
        assert_eq!(s.matches_partly(unknown_b), None);
        let wrong_a = |k: &str| if k == "a" { Ok(Some("z")) } else { Err(()) };
        assert_eq!(s.matches_partly(wrong_a), Some(false));
    }
}
