//! The Pod Security Standards' `restricted` profile, rule by rule, applied to the sync Job's pod.
//!
//! The rules are those of the Kubernetes documentation's Pod Security Standards page
//! (kubernetes.io/docs/concepts/security/pod-security-standards/, the Baseline and Restricted
//! tables; Restricted includes all of Baseline), as Pod Security Admission implements them at
//! its newest version (k8s.io/pod-security-admission, `policy/check_*.go`; each violation starts
//! with that file's check ID). Where admission makes an exception (`hostUsers: false` lets
//! `runAsNonRoot`, `runAsUser` and `procMount` be anything; Windows pods skip some checks),
//! these checks make none: a pod they pass, admission passes on those rules too.

use serde_json::Value;

/// Every container of the pod, as `visitContainers` walks them: containers, init containers,
/// ephemeral containers.
fn containers(spec: &Value) -> Vec<&Value> {
    ["containers", "initContainers", "ephemeralContainers"]
        .iter()
        .filter_map(|k| spec[*k].as_array())
        .flatten()
        .collect()
}

fn name(container: &Value) -> &str {
    container["name"].as_str().unwrap_or("?")
}

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The violations of the restricted profile by a pod with `metadata` and `spec`, empty when it
/// passes.
pub fn restricted_violations(metadata: &Value, spec: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let pod_sc = &spec["securityContext"];
    let all = containers(spec);

    // Baseline.
    // hostNamespaces: spec.hostNetwork, hostPID, hostIPC undefined or false.
    for field in ["hostNetwork", "hostPID", "hostIPC"] {
        if spec[field] == Value::Bool(true) {
            out.push(format!("hostNamespaces: spec.{field} is true"));
        }
    }
    // windowsHostProcess: undefined or false, pod and containers.
    if pod_sc["windowsOptions"]["hostProcess"] == Value::Bool(true) {
        out.push("windowsHostProcess: the pod sets hostProcess".into());
    }
    for c in &all {
        let sc = &c["securityContext"];
        if sc["windowsOptions"]["hostProcess"] == Value::Bool(true) {
            out.push(format!(
                "windowsHostProcess: container {} sets hostProcess",
                name(c)
            ));
        }
        // privileged: false or undefined.
        if sc["privileged"] == Value::Bool(true) {
            out.push(format!("privileged: container {} is privileged", name(c)));
        }
        // hostPorts: undefined or 0.
        for port in c["ports"].as_array().into_iter().flatten() {
            if port["hostPort"].as_i64().unwrap_or(0) != 0 {
                out.push(format!("hostPorts: container {} uses a hostPort", name(c)));
            }
        }
        // hostProbesAndHostLifecycle: no host in probes' or lifecycle handlers' httpGet/tcpSocket.
        for probe in [
            "livenessProbe",
            "readinessProbe",
            "startupProbe",
            "lifecycle/postStart",
            "lifecycle/preStop",
        ] {
            let handler = probe.split('/').fold(*c, |v: &Value, k| &v[k]);
            for kind in ["httpGet", "tcpSocket"] {
                if handler[kind]["host"]
                    .as_str()
                    .is_some_and(|h| !h.is_empty())
                {
                    out.push(format!(
                        "hostProbesAndHostLifecycle: container {} sets {probe}.{kind}.host",
                        name(c)
                    ));
                }
            }
        }
        // appArmorProfile: RuntimeDefault, Localhost or undefined.
        if let Some(kind) = sc["appArmorProfile"]["type"].as_str() {
            if !["RuntimeDefault", "Localhost"].contains(&kind) {
                out.push(format!(
                    "appArmorProfile: container {} uses {kind}",
                    name(c)
                ));
            }
        }
        // seLinuxOptions: type from the allowed set, no user, no role.
        out.extend(selinux(
            &sc["seLinuxOptions"],
            &format!("container {}", name(c)),
        ));
        // procMount (baseline) and procMount_restricted: undefined or Default.
        if let Some(mount) = sc["procMount"].as_str() {
            if mount != "Default" {
                out.push(format!(
                    "procMount_restricted: container {} sets procMount {mount}",
                    name(c)
                ));
            }
        }
        // capabilities_restricted (overrides capabilities_baseline): drop includes ALL, add
        // only NET_BIND_SERVICE.
        let caps = &sc["capabilities"];
        if !strings(&caps["drop"]).contains(&"ALL") {
            out.push(format!(
                "capabilities_restricted: container {} does not drop ALL",
                name(c)
            ));
        }
        for add in strings(&caps["add"]) {
            if add != "NET_BIND_SERVICE" {
                out.push(format!(
                    "capabilities_restricted: container {} adds {add}",
                    name(c)
                ));
            }
        }
        // allowPrivilegeEscalation: false (undefined is not allowed).
        if sc["allowPrivilegeEscalation"] != Value::Bool(false) {
            out.push(format!(
                "allowPrivilegeEscalation: container {} does not set it to false",
                name(c)
            ));
        }
        // runAsNonRoot: true, or undefined at container level when the pod sets true.
        match &sc["runAsNonRoot"] {
            Value::Bool(true) => {}
            Value::Null if pod_sc["runAsNonRoot"] == Value::Bool(true) => {}
            _ => out.push(format!(
                "runAsNonRoot: container {} may run as root",
                name(c)
            )),
        }
        // runAsUser: not 0.
        if sc["runAsUser"].as_i64() == Some(0) {
            out.push(format!("runAsUser: container {} runs as uid 0", name(c)));
        }
        // seccompProfile_restricted (overrides baseline): RuntimeDefault or Localhost, on the
        // container or inherited from the pod.
        let own = sc["seccompProfile"]["type"].as_str();
        let pod = pod_sc["seccompProfile"]["type"].as_str();
        match own.or(pod) {
            Some("RuntimeDefault" | "Localhost") => {}
            other => out.push(format!(
                "seccompProfile_restricted: container {} has seccomp profile {other:?}",
                name(c)
            )),
        }
        if let Some(kind) = own.filter(|k| !["RuntimeDefault", "Localhost"].contains(k)) {
            out.push(format!(
                "seccompProfile_restricted: container {} sets {kind}",
                name(c)
            ));
        }
    }
    if let Some(kind) = pod_sc["appArmorProfile"]["type"].as_str() {
        if !["RuntimeDefault", "Localhost"].contains(&kind) {
            out.push(format!("appArmorProfile: the pod uses {kind}"));
        }
    }
    for (key, value) in metadata["annotations"].as_object().into_iter().flatten() {
        if key.starts_with("container.apparmor.security.beta.kubernetes.io/") {
            let v = value.as_str().unwrap_or_default();
            if !(v.is_empty() || v == "runtime/default" || v.starts_with("localhost/")) {
                out.push(format!("appArmorProfile: annotation {key} is {v}"));
            }
        }
    }
    out.extend(selinux(&pod_sc["seLinuxOptions"], "the pod"));
    // sysctls: only the safe set.
    const SAFE_SYSCTLS: &[&str] = &[
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
        "net.ipv4.tcp_rmem",
        "net.ipv4.tcp_wmem",
        "net.ipv4.tcp_slow_start_after_idle",
        "net.ipv4.tcp_notsent_lowat",
    ];
    for sysctl in pod_sc["sysctls"].as_array().into_iter().flatten() {
        let n = sysctl["name"].as_str().unwrap_or_default();
        if !SAFE_SYSCTLS.contains(&n) {
            out.push(format!("sysctls: {n} is not a safe sysctl"));
        }
    }
    // Restricted.
    // runAsUser 0 and runAsNonRoot false are refused on the pod too (each container was
    // checked above, inheriting the pod's runAsNonRoot).
    if pod_sc["runAsUser"].as_i64() == Some(0) {
        out.push("runAsUser: the pod runs as uid 0".into());
    }
    if pod_sc["runAsNonRoot"] == Value::Bool(false) {
        out.push("runAsNonRoot: the pod sets it to false".into());
    }
    if let Some(kind) = pod_sc["seccompProfile"]["type"]
        .as_str()
        .filter(|k| !["RuntimeDefault", "Localhost"].contains(k))
    {
        out.push(format!("seccompProfile_restricted: the pod sets {kind}"));
    }
    // hostPathVolumes and restrictedVolumes: only these volume sources.
    const VOLUMES: &[&str] = &[
        "configMap",
        "downwardAPI",
        "emptyDir",
        "projected",
        "secret",
        "csi",
        "persistentVolumeClaim",
        "ephemeral",
        "image",
    ];
    for volume in spec["volumes"].as_array().into_iter().flatten() {
        for source in volume.as_object().into_iter().flatten().map(|(k, _)| k) {
            if source == "name" {
                continue;
            }
            if source == "hostPath" {
                out.push(format!(
                    "hostPathVolumes: volume {} is a hostPath",
                    volume["name"]
                ));
            } else if !VOLUMES.contains(&source.as_str()) {
                out.push(format!(
                    "restrictedVolumes: volume {} is a {source}",
                    volume["name"]
                ));
            }
        }
    }
    out
}

fn selinux(options: &Value, whose: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(kind) = options["type"].as_str() {
        const TYPES: &[&str] = &[
            "",
            "container_t",
            "container_init_t",
            "container_kvm_t",
            "container_engine_t",
        ];
        if !TYPES.contains(&kind) {
            out.push(format!("seLinuxOptions: {whose} sets type {kind}"));
        }
    }
    for field in ["user", "role"] {
        if options[field].as_str().is_some_and(|v| !v.is_empty()) {
            out.push(format!("seLinuxOptions: {whose} sets {field}"));
        }
    }
    out
}
