//! The consumer's access providers (the setting `accessProviders`): the `providers` of
//! cluster-inventory-api's provider file (`pkg/access/config.go`, `Config` and `Provider`), each
//! a name and the exec plugin that logs in for it, and the policies for the arguments and
//! environment a profile's cluster extensions add.

// Private to the library; the `internals` facade shows parts of it to this crate's own tests,
// which need no documentation of every item.
#![cfg_attr(feature = "internals", allow(missing_docs))]

use krm::finding::Finding;
use yaml::Node;

/// One provider the consumer can log in with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provider {
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    /// Name and value, in order, as a kubeconfig's exec lists them.
    pub env: Vec<(String, String)>,
    pub api_version: Option<String>,
    pub provide_cluster_info: bool,
    pub args_policy: ArgsPolicy,
    pub env_policy: EnvPolicy,
}

/// `profileSourcedCLIArgsPolicy`: what to do with the arguments a profile's extension
/// `clusterprofiles.multicluster.x-k8s.io/exec/additional-args` adds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ArgsPolicy {
    #[default]
    Ignore,
    Append,
}

/// `profileSourcedEnvVarsPolicy`: what to do with the variables a profile's extension
/// `clusterprofiles.multicluster.x-k8s.io/exec/additional-envs` adds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EnvPolicy {
    #[default]
    Ignore,
    /// The provider's own value wins over the profile's.
    AppendIfNotExists,
    /// The profile's value wins over the provider's.
    Replace,
}

fn text(node: Option<&Node>) -> Option<String> {
    node.and_then(Node::as_str).map(String::from)
}

/// Reads the providers: a list of them, or a whole provider file (`{providers: [...]}`).
pub fn parse(node: &Node) -> Result<Vec<Provider>, Finding> {
    let list = match node.get("providers") {
        Some(p) => p,
        None => node,
    };
    if list.is_null() {
        return Ok(Vec::new());
    }
    let items = list.as_seq().ok_or_else(|| {
        Finding::error(format!(
            "expected a list of providers ({{name, execConfig}}), got {}",
            list.type_name()
        ))
    })?;
    let mut out: Vec<Provider> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = format!("[{i}]");
        let provider = one(item).map_err(|f| f.under(&at))?;
        if out.iter().any(|p| p.name == provider.name) {
            return Err(Finding::error(format!(
                "provider {:?} is listed twice: the first would always win",
                provider.name
            ))
            .at(format!("{at}.name")));
        }
        out.push(provider);
    }
    Ok(out)
}

fn one(item: &Node) -> Result<Provider, Finding> {
    if item.as_map().is_none() {
        return Err(Finding::error(format!(
            "expected a provider {{name, execConfig}}, got {}",
            item.type_name()
        )));
    }
    let name = text(item.get("name"))
        .filter(|n| !n.trim().is_empty())
        .ok_or_else(|| Finding::error("is missing").at(".name"))?;
    let exec = item
        .get("execConfig")
        .filter(|e| e.as_map().is_some())
        .ok_or_else(|| {
            Finding::error(format!(
                "is missing: provider {name:?} needs the exec plugin that logs in for it"
            ))
            .at(".execConfig")
        })?;
    let command = text(exec.get("command"))
        .filter(|c| !c.trim().is_empty())
        .ok_or_else(|| Finding::error("is missing").at(".execConfig.command"))?;
    let args = match exec.get("args").filter(|a| !a.is_null()) {
        None => Vec::new(),
        Some(a) => a
            .as_seq()
            .ok_or_else(|| Finding::error("expected a list of strings").at(".execConfig.args"))?
            .iter()
            .map(|v| text(Some(v)))
            .collect::<Option<_>>()
            .ok_or_else(|| Finding::error("expected a list of strings").at(".execConfig.args"))?,
    };
    let mut env = Vec::new();
    for (i, e) in exec
        .get("env")
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let name = text(e.get("name"))
            .filter(|n| !n.is_empty())
            .ok_or_else(|| {
                Finding::error("is missing (env is a list of name and value)")
                    .at(format!(".execConfig.env[{i}].name"))
            })?;
        env.push((name, text(e.get("value")).unwrap_or_default()));
    }
    let args_policy = match text(item.get("profileSourcedCLIArgsPolicy")).as_deref() {
        None | Some("") | Some("Ignore") => ArgsPolicy::Ignore,
        Some("Append") => ArgsPolicy::Append,
        Some(other) => {
            return Err(
                Finding::error(format!("{other:?} is not a policy: Append or Ignore"))
                    .at(".profileSourcedCLIArgsPolicy"),
            );
        }
    };
    let env_policy = match text(item.get("profileSourcedEnvVarsPolicy")).as_deref() {
        None | Some("") | Some("Ignore") => EnvPolicy::Ignore,
        Some("AppendIfNotExists") => EnvPolicy::AppendIfNotExists,
        Some("Replace") => EnvPolicy::Replace,
        Some(other) => {
            return Err(Finding::error(format!(
                "{other:?} is not a policy: AppendIfNotExists, Replace or Ignore"
            ))
            .at(".profileSourcedEnvVarsPolicy"));
        }
    };
    Ok(Provider {
        name,
        command,
        args,
        env,
        api_version: text(exec.get("apiVersion")).filter(|v| !v.is_empty()),
        provide_cluster_info: exec
            .get("provideClusterInfo")
            .and_then(Node::as_bool)
            .unwrap_or(false),
        args_policy,
        env_policy,
    })
}
