package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// object is one decoded manifest.
type object struct {
	source string // the template it came from (helm's "# Source:" line)
	kind   string
	meta   metav1.Object
	obj    runtime.Object
}

func (o object) String() string {
	return fmt.Sprintf("%s %s (%s)", o.kind, o.meta.GetName(), o.source)
}

// hook returns the object's Helm hook events and weight; events is empty for
// an object of the release itself.
func (o object) hook() (events []string, weight int) {
	a := o.meta.GetAnnotations()
	if a["helm.sh/hook"] == "" {
		return nil, 0
	}
	weight, _ = strconv.Atoi(a["helm.sh/hook-weight"])
	return strings.Split(a["helm.sh/hook"], ","), weight
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// runManifests reads the manifests `helm template` printed and checks them:
//   - each decodes strictly into the Kubernetes API types of the version this
//     module pins (k8s.io/api), or prometheus-operator's for a ServiceMonitor:
//     an unknown kind, an unknown or duplicated field or a wrong type fails;
//   - names, labels and annotation keys are valid, and no two objects clash;
//   - pods run as a non-root user on a read-only root filesystem without
//     privilege escalation or capabilities, with memory and CPU requests and
//     a memory limit, liveness and readiness probes on ports they declare,
//     and a termination grace period;
//   - every ConfigMap, Secret, key, volume and ServiceAccount a pod names is
//     rendered (or named with -external), and an install hook names only hooks
//     created before it;
//   - selectors select: Deployments their pods, Services, PodDisruptionBudgets
//     and ServiceMonitors some pods or Service, with the ports they name; an
//     autoscaled Deployment leaves its replicas to the autoscaler.
//
// -want KIND=N checks how many objects of a kind there are; -config-out FILE
// writes the svc.toml the replicas mount.
func runManifests(args []string) error {
	flags := flag.NewFlagSet("manifests", flag.ContinueOnError)
	var external, want multiFlag
	flags.Var(&external, "external", "a Secret or ConfigMap `NAME` that exists outside the chart (repeatable)")
	flags.Var(&want, "want", "expect `KIND=N` objects of a kind (repeatable)")
	configOut := flags.String("config-out", "", "write the replicas' svc.toml to `FILE`")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if flags.NArg() != 0 {
		return errors.New("usage: deploycheck manifests [-external NAME]... [-want KIND=N]... [-config-out FILE] < manifests")
	}
	objs, err := decodeAll(os.Stdin)
	if err != nil {
		return err
	}
	var p problems
	c := &checker{p: &p, objs: objs, external: map[string]bool{}}
	for _, n := range external {
		c.external[n] = true
	}
	c.run()
	counts := map[string]int{}
	for _, o := range objs {
		counts[o.kind]++
	}
	for _, w := range want {
		kind, n, ok := strings.Cut(w, "=")
		count, err := strconv.Atoi(n)
		if !ok || err != nil {
			return fmt.Errorf("-want %q: want KIND=N", w)
		}
		if counts[kind] != count {
			p.add("%d %s object(s), want %d", counts[kind], kind, count)
		}
	}
	if *configOut != "" {
		if err := writeConfig(objs, *configOut); err != nil {
			p.add("%v", err)
		}
	}
	if err := p.err(); err != nil {
		return err
	}
	kinds := make([]string, 0, len(counts))
	for k, n := range counts {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	slices.Sort(kinds)
	fmt.Printf("%d objects valid: %s\n", len(objs), strings.Join(kinds, ", "))
	return nil
}

func decodeAll(r io.Reader) ([]object, error) {
	sch := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(sch); err != nil {
		return nil, err
	}
	if err := monitoringv1.AddToScheme(sch); err != nil {
		return nil, err
	}
	decoder := serializer.NewCodecFactory(sch, serializer.EnableStrict).UniversalDeserializer()
	reader := k8syaml.NewYAMLReader(bufio.NewReader(r))
	var objs []object
	var errs []string
	for i := 1; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		source := fmt.Sprintf("document %d", i)
		empty := true
		for _, l := range strings.Split(string(doc), "\n") {
			t := strings.TrimSpace(l)
			if s, ok := strings.CutPrefix(t, "# Source: "); ok {
				source = s
			}
			if t != "" && !strings.HasPrefix(t, "#") && t != "---" {
				empty = false
			}
		}
		if empty {
			continue
		}
		obj, gvk, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", source, err))
			continue
		}
		meta, ok := obj.(metav1.Object)
		if !ok {
			errs = append(errs, fmt.Sprintf("%s: %s has no object metadata", source, gvk))
			continue
		}
		objs = append(objs, object{source: source, kind: gvk.Kind, meta: meta, obj: obj})
	}
	if len(errs) > 0 {
		for _, e := range errs {
			fmt.Fprintln(os.Stderr, "  "+e)
		}
		return nil, fmt.Errorf("%d manifest(s) do not decode strictly", len(errs))
	}
	if len(objs) == 0 {
		return nil, errors.New("no manifests on standard input")
	}
	return objs, nil
}

func writeConfig(objs []object, path string) error {
	for _, o := range objs {
		cm, ok := o.obj.(*corev1.ConfigMap)
		if events, _ := o.hook(); !ok || len(events) > 0 {
			continue
		}
		if toml, ok := cm.Data["svc.toml"]; ok {
			return os.WriteFile(path, []byte(toml), 0o600)
		}
	}
	return errors.New("no ConfigMap of the release holds svc.toml")
}

type checker struct {
	p        *problems
	objs     []object
	external map[string]bool
}

func (c *checker) find(kind, name string) (object, bool) {
	for _, o := range c.objs {
		if o.kind == kind && o.meta.GetName() == name {
			return o, true
		}
	}
	return object{}, false
}

func (c *checker) run() {
	seen := map[string]string{}
	for _, o := range c.objs {
		key := o.kind + "/" + o.meta.GetName()
		if prev, dup := seen[key]; dup {
			c.p.add("%s: the same %s name as %s", o, o.kind, prev)
		}
		seen[key] = o.source
		c.checkMeta(o)
		switch x := o.obj.(type) {
		case *appsv1.Deployment:
			c.checkDeployment(o, x)
		case *batchv1.Job:
			c.checkPod(o, &x.Spec.Template)
		case *corev1.Service:
			c.checkService(o, x)
		case *policyv1.PodDisruptionBudget:
			c.checkPDB(o, x)
		case *autoscalingv2.HorizontalPodAutoscaler:
			c.checkHPA(o, x)
		case *monitoringv1.ServiceMonitor:
			c.checkServiceMonitor(o, x)
		case *corev1.Secret, *corev1.ConfigMap, *corev1.ServiceAccount:
		default:
			c.p.add("%s: a kind this check does not know; add its rules", o)
		}
	}
}

func (c *checker) checkMeta(o object) {
	name := o.meta.GetName()
	var errs []string
	if o.kind == "Service" {
		errs = validation.IsDNS1035Label(name)
	} else {
		errs = validation.IsDNS1123Subdomain(name)
	}
	for _, e := range errs {
		c.p.add("%s: name: %s", o, e)
	}
	for k, v := range o.meta.GetLabels() {
		for _, e := range validation.IsQualifiedName(k) {
			c.p.add("%s: label %q: %s", o, k, e)
		}
		for _, e := range validation.IsValidLabelValue(v) {
			c.p.add("%s: label %s=%q: %s", o, k, v, e)
		}
	}
	for k := range o.meta.GetAnnotations() {
		for _, e := range validation.IsQualifiedName(k) {
			c.p.add("%s: annotation %q: %s", o, k, e)
		}
	}
}

func (c *checker) checkDeployment(o object, d *appsv1.Deployment) {
	if d.Spec.Selector == nil {
		c.p.add("%s: no selector", o)
	} else if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err != nil || sel.Empty() {
		c.p.add("%s: selector %v is empty or invalid (%v)", o, d.Spec.Selector, err)
	} else if !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		c.p.add("%s: selector %s does not select its own pod template (labels %v)", o, sel, d.Spec.Template.Labels)
	}
	c.checkPod(o, &d.Spec.Template)
}

// checkPod checks a pod template and what it refers to.
func (c *checker) checkPod(o object, t *corev1.PodTemplateSpec) {
	spec := &t.Spec
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		c.p.add("%s: pod securityContext.runAsNonRoot is not true", o)
	}
	if psc != nil && psc.RunAsUser != nil && *psc.RunAsUser == 0 {
		c.p.add("%s: pod securityContext.runAsUser is 0", o)
	}
	if spec.TerminationGracePeriodSeconds == nil && o.kind == "Deployment" {
		c.p.add("%s: no terminationGracePeriodSeconds", o)
	}
	if spec.ServiceAccountName != "" && spec.ServiceAccountName != "default" && !c.external[spec.ServiceAccountName] {
		c.refer(o, "ServiceAccount", spec.ServiceAccountName, "")
	}
	volumes := map[string]bool{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = true
		switch {
		case v.ConfigMap != nil:
			for _, it := range v.ConfigMap.Items {
				c.refer(o, "ConfigMap", v.ConfigMap.Name, it.Key)
			}
			if len(v.ConfigMap.Items) == 0 {
				c.refer(o, "ConfigMap", v.ConfigMap.Name, "")
			}
		case v.Secret != nil:
			for _, it := range v.Secret.Items {
				c.refer(o, "Secret", v.Secret.SecretName, it.Key)
			}
			if len(v.Secret.Items) == 0 {
				c.refer(o, "Secret", v.Secret.SecretName, "")
			}
		}
	}
	if len(spec.Containers) == 0 {
		c.p.add("%s: no containers", o)
	}
	for _, ctr := range spec.Containers {
		where := fmt.Sprintf("%s container %s", o, ctr.Name)
		for _, e := range validation.IsDNS1123Label(ctr.Name) {
			c.p.add("%s: name: %s", where, e)
		}
		if ctr.Image == "" {
			c.p.add("%s: no image", where)
		}
		c.checkContainerSecurity(where, ctr.SecurityContext)
		c.checkResources(where, ctr.Resources)
		ports := map[string]bool{}
		for _, port := range ctr.Ports {
			if port.Name != "" {
				for _, e := range validation.IsValidPortName(port.Name) {
					c.p.add("%s: port name %q: %s", where, port.Name, e)
				}
				ports[port.Name] = true
			}
			ports[strconv.Itoa(int(port.ContainerPort))] = true
		}
		if o.kind == "Deployment" {
			if ctr.ReadinessProbe == nil || ctr.LivenessProbe == nil {
				c.p.add("%s: needs a readiness and a liveness probe", where)
			}
			for _, probe := range []*corev1.Probe{ctr.ReadinessProbe, ctr.LivenessProbe, ctr.StartupProbe} {
				if probe != nil && probe.HTTPGet != nil {
					if !ports[probe.HTTPGet.Port.String()] {
						c.p.add("%s: probe on port %s, which the container does not declare", where, probe.HTTPGet.Port.String())
					}
					if !strings.HasPrefix(probe.HTTPGet.Path, "/") {
						c.p.add("%s: probe path %q", where, probe.HTTPGet.Path)
					}
				}
			}
		}
		for _, m := range ctr.VolumeMounts {
			if !volumes[m.Name] {
				c.p.add("%s: mounts volume %s, which the pod does not have", where, m.Name)
			}
		}
		for _, env := range ctr.Env {
			if env.ValueFrom != nil && env.ValueFrom.SecretKeyRef != nil {
				c.refer(o, "Secret", env.ValueFrom.SecretKeyRef.Name, env.ValueFrom.SecretKeyRef.Key)
			}
			if env.ValueFrom != nil && env.ValueFrom.ConfigMapKeyRef != nil {
				c.refer(o, "ConfigMap", env.ValueFrom.ConfigMapKeyRef.Name, env.ValueFrom.ConfigMapKeyRef.Key)
			}
		}
	}
}

func (c *checker) checkContainerSecurity(where string, sc *corev1.SecurityContext) {
	if sc == nil {
		c.p.add("%s: no securityContext", where)
		return
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		c.p.add("%s: readOnlyRootFilesystem is not true", where)
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		c.p.add("%s: allowPrivilegeEscalation is not false", where)
	}
	if sc.Privileged != nil && *sc.Privileged {
		c.p.add("%s: privileged", where)
	}
	if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
		c.p.add("%s: capabilities must drop ALL and add none", where)
	}
}

func (c *checker) checkResources(where string, r corev1.ResourceRequirements) {
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := r.Requests[name]; !ok {
			c.p.add("%s: no %s request", where, name)
		}
	}
	if _, ok := r.Limits[corev1.ResourceMemory]; !ok {
		c.p.add("%s: no memory limit", where)
	}
	for name, req := range r.Requests {
		if lim, ok := r.Limits[name]; ok && req.Cmp(lim) > 0 {
			c.p.add("%s: %s request %s above its limit %s", where, name, req.String(), lim.String())
		}
	}
}

// refer checks that a pod's reference to a ConfigMap or Secret (and one of
// its keys, when key is not empty) resolves, and that an install hook refers
// only to what exists before it runs.
func (c *checker) refer(o object, kind, name, key string) {
	if c.external[name] {
		return
	}
	target, ok := c.find(kind, name)
	if !ok {
		c.p.add("%s: refers to %s %s, which is not rendered (an existing one? pass -external %s)", o, kind, name, name)
		return
	}
	if key != "" {
		has := false
		switch x := target.obj.(type) {
		case *corev1.Secret:
			_, inData := x.Data[key]
			_, inString := x.StringData[key]
			has = inData || inString
		case *corev1.ConfigMap:
			_, has = x.Data[key]
		}
		if !has {
			c.p.add("%s: refers to key %s of %s, which has no such key", o, key, target)
		}
	}
	events, weight := o.hook()
	if !slices.ContainsFunc(events, func(e string) bool { return strings.HasPrefix(e, "pre-") }) {
		return
	}
	targetEvents, targetWeight := target.hook()
	for _, e := range events {
		if !slices.Contains(targetEvents, e) || targetWeight >= weight {
			c.p.add("%s: a %s hook refers to %s, which is not a %s hook created before it (lower hook-weight)", o, e, target, e)
		}
	}
}

// podsSelectedBy returns the pod templates of rendered Deployments that sel selects.
func (c *checker) podsSelectedBy(sel labels.Selector) []*corev1.PodTemplateSpec {
	var pods []*corev1.PodTemplateSpec
	for _, x := range c.objs {
		if d, ok := x.obj.(*appsv1.Deployment); ok && sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			pods = append(pods, &d.Spec.Template)
		}
	}
	return pods
}

func (c *checker) checkService(o object, s *corev1.Service) {
	if len(s.Spec.Selector) == 0 {
		c.p.add("%s: no selector", o)
		return
	}
	pods := c.podsSelectedBy(labels.SelectorFromSet(s.Spec.Selector))
	if len(pods) == 0 {
		c.p.add("%s: selector %v selects no pods", o, s.Spec.Selector)
	}
	for _, port := range s.Spec.Ports {
		for _, e := range validation.IsValidPortName(port.Name) {
			c.p.add("%s: port name %q: %s", o, port.Name, e)
		}
		target := port.TargetPort.String()
		for _, pod := range pods {
			found := false
			for _, ctr := range pod.Spec.Containers {
				for _, cp := range ctr.Ports {
					if cp.Name == target || strconv.Itoa(int(cp.ContainerPort)) == target {
						found = true
					}
				}
			}
			if !found {
				c.p.add("%s: targetPort %s is not a port of the pods %v", o, target, pod.Labels)
			}
		}
	}
}

func (c *checker) checkPDB(o object, pdb *policyv1.PodDisruptionBudget) {
	if (pdb.Spec.MaxUnavailable == nil) == (pdb.Spec.MinAvailable == nil) {
		c.p.add("%s: set exactly one of maxUnavailable and minAvailable", o)
	}
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil || sel.Empty() {
		c.p.add("%s: selector is empty or invalid (%v)", o, err)
		return
	}
	if len(c.podsSelectedBy(sel)) == 0 {
		c.p.add("%s: selector %s selects no Deployment's pods", o, sel)
	}
}

func (c *checker) checkHPA(o object, h *autoscalingv2.HorizontalPodAutoscaler) {
	ref := h.Spec.ScaleTargetRef
	target, ok := c.find(ref.Kind, ref.Name)
	if !ok || ref.APIVersion != "apps/v1" {
		c.p.add("%s: scales %s %s %s, which is not rendered", o, ref.APIVersion, ref.Kind, ref.Name)
		return
	}
	d, ok := target.obj.(*appsv1.Deployment)
	if !ok {
		return
	}
	if d.Spec.Replicas != nil {
		c.p.add("%s: %s sets replicas, which every upgrade would reset under the autoscaler", o, target)
	}
	if h.Spec.MinReplicas != nil && *h.Spec.MinReplicas > h.Spec.MaxReplicas {
		c.p.add("%s: minReplicas above maxReplicas", o)
	}
	for _, m := range h.Spec.Metrics {
		if m.Resource == nil {
			continue
		}
		for _, ctr := range d.Spec.Template.Spec.Containers {
			if _, ok := ctr.Resources.Requests[m.Resource.Name]; !ok {
				c.p.add("%s: scales on %s utilization, but container %s requests no %s", o, m.Resource.Name, ctr.Name, m.Resource.Name)
			}
		}
	}
}

func (c *checker) checkServiceMonitor(o object, sm *monitoringv1.ServiceMonitor) {
	sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
	if err != nil || sel.Empty() {
		c.p.add("%s: selector is empty or invalid (%v)", o, err)
		return
	}
	var services []*corev1.Service
	for _, x := range c.objs {
		if s, ok := x.obj.(*corev1.Service); ok && sel.Matches(labels.Set(s.Labels)) {
			services = append(services, s)
		}
	}
	if len(services) == 0 {
		c.p.add("%s: selector %s selects no Service", o, sel)
	}
	for _, ep := range sm.Spec.Endpoints {
		for _, s := range services {
			if !slices.ContainsFunc(s.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep.Port }) {
				c.p.add("%s: endpoint port %q is not a port of Service %s", o, ep.Port, s.Name)
			}
		}
	}
}
