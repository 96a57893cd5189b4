#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# A pod of a dist/kubernetes/ StatefulSet or DaemonSet as podman would run it:
# prints the `podman run` arguments (one per line) that give its container
# what the kubelet would: the image, args, env (fieldRef metadata.name and
# spec.nodeName from --pod-name / --node-name), the security context (user
# and group, fsGroup, capabilities, read-only root, no privilege escalation),
# the memory limit, the grace period, and its volumes (a directory per
# volume name from --volume NAME=DIR; a configMap volume is written from the
# manifest's ConfigMap into DIR). A field this script does not map is an error
# naming it, so the test cannot silently run something other than the
# manifest. tests/ops/test_podman.sh uses it.
#
# usage: k8s_podman.py MANIFEST --pod-name NAME [--node-name NAME]
#        [--volume NAME=DIR]... [--configmaps FILE]...
import argparse
import os
import sys

import yaml

KNOWN_POD = {"containers", "securityContext", "volumes", "terminationGracePeriodSeconds",
             "automountServiceAccountToken", "enableServiceLinks", "hostNetwork", "dnsPolicy",
             "nodeSelector"}
KNOWN_CTR = {"name", "image", "imagePullPolicy", "args", "env", "ports", "readinessProbe",
             "livenessProbe", "resources", "securityContext", "volumeMounts"}
KNOWN_PSC = {"runAsNonRoot", "runAsUser", "runAsGroup", "fsGroup", "fsGroupChangePolicy", "seccompProfile"}
KNOWN_CSC = {"allowPrivilegeEscalation", "readOnlyRootFilesystem", "privileged", "capabilities",
             "runAsUser", "runAsNonRoot"}


def die(msg):
    print(f"k8s_podman.py: {msg}", file=sys.stderr)
    sys.exit(1)


def unknown(what, d, known):
    extra = set(d) - known
    if extra:
        die(f"{what}: {', '.join(sorted(extra))} not mapped to podman by this test")


def memory(q):
    for suf, mul in (("Ki", 1 << 10), ("Mi", 1 << 20), ("Gi", 1 << 30)):
        if q.endswith(suf):
            return int(q[:-len(suf)]) * mul
    return int(q)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("manifest")
    ap.add_argument("--pod-name", required=True)
    ap.add_argument("--node-name", default="node")
    ap.add_argument("--volume", action="append", default=[])
    ap.add_argument("--configmaps", action="append", default=[])
    a = ap.parse_args()
    vols = dict(v.split("=", 1) for v in a.volume)
    docs = [d for d in yaml.safe_load_all(open(a.manifest)) if d]
    work = [d for d in docs if d["kind"] in ("StatefulSet", "DaemonSet")]
    if len(work) != 1:
        die(f"{a.manifest}: not one StatefulSet or DaemonSet")
    cms = {d["metadata"]["name"]: d for f in a.configmaps for d in yaml.safe_load_all(open(f))
           if d and d["kind"] == "ConfigMap"}
    pod = work[0]["spec"]["template"]["spec"]
    unknown("pod spec", pod, KNOWN_POD)
    if len(pod["containers"]) != 1:
        die("one container expected")
    c = pod["containers"][0]
    unknown("container", c, KNOWN_CTR)
    out = ["--hostname", a.pod_name]
    psc = pod.get("securityContext", {})
    unknown("pod securityContext", psc, KNOWN_PSC)
    csc = c.get("securityContext", {})
    unknown("container securityContext", csc, KNOWN_CSC)
    uid = csc.get("runAsUser", psc.get("runAsUser"))
    gid = psc.get("runAsGroup", uid)
    if uid is not None:
        out += ["--user", f"{uid}:{gid}"]
    if csc.get("runAsNonRoot", psc.get("runAsNonRoot")) and not uid:
        die("runAsNonRoot with user 0 or none: the kubelet would refuse to start it")
    if "fsGroup" in psc:
        out += ["--group-add", str(psc["fsGroup"])]
    sp = psc.get("seccompProfile", {}).get("type", "RuntimeDefault")
    if sp != "RuntimeDefault":
        die(f"seccompProfile {sp} not mapped")
    caps = csc.get("capabilities", {})
    for cap in caps.get("drop", []):
        out += ["--cap-drop", cap.lower()]
    for cap in caps.get("add", []):
        out += ["--cap-add", cap.lower()]
    if csc.get("privileged"):
        out += ["--privileged"]
    if csc.get("allowPrivilegeEscalation") is False:
        out += ["--security-opt", "no-new-privileges"]
    if csc.get("readOnlyRootFilesystem"):
        # the kubelet adds no tmpfs of its own: neither does this
        out += ["--read-only", "--read-only-tmpfs=false"]
    lim = c.get("resources", {}).get("limits", {})
    if "memory" in lim:
        out += ["--memory", str(memory(lim["memory"]))]
    out += ["--stop-timeout", str(pod.get("terminationGracePeriodSeconds", 30))]
    for e in c.get("env", []):
        if "value" in e:
            out += ["--env", f"{e['name']}={e['value']}"]
            continue
        path = e["valueFrom"]["fieldRef"]["fieldPath"]
        val = {"metadata.name": a.pod_name, "spec.nodeName": a.node_name}.get(path)
        if val is None:
            die(f"env {e['name']}: fieldRef {path} not mapped")
        out += ["--env", f"{e['name']}={val}"]
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for m in c.get("volumeMounts", []):
        name, path = m["name"], m["mountPath"]
        if name not in vols:
            die(f"volume {name}: no --volume {name}=DIR")
        d = vols[name]
        v = volumes.get(name, {})
        if "configMap" in v:
            cm = cms.get(v["configMap"]["name"])
            if cm is None:
                die(f"configMap {v['configMap']['name']}: not in --configmaps")
            os.makedirs(d, exist_ok=True)
            for k, text in cm["data"].items():
                with open(os.path.join(d, k), "w") as f:
                    f.write(text)
        opt = ":ro" if m.get("readOnly") else ""
        out += ["--volume", f"{d}:{path}{opt}"]
    out.append(c["image"])
    out += [str(x) for x in c.get("args", [])]
    print("\n".join(out))


main()
