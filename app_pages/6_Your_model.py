"""Your model, your data: audit a model or data set the user brings, in the layouts they have.

Four ways in, one code path with the CLI: data in a local folder or file (class folders of images, a
CSV table, parallel text) trained and attacked with our FFNN and RNN; the user's own trained weights
as the victim; just a file of per-record scores; and the server's plugin tasks (code is loaded only
from the server's configuration, never from anything sent through this page). The page gathers the
inputs, calls ``core`` (``inspect``'s preview, ``score``'s scoring) and submits training to the job
queue; results open in the same views as a built-in task, and the Defenses and Analyses pages list
the runs it trained.
"""
from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from core.analyses.scores import ScoresResult, score_file
from core.analyses.user_audit import assign_roles, utility_estimates, utility_loss_estimate
from core.audit import AuditResult
from core.data.user_records import read_records
from core.experiment.data_preview import DataPreview, preview_data
from core.foundations.config import ExperimentConfig
from core.foundations.errors import MIAError
from core.foundations.names import ARCH_NAMES as ARCH_LABELS
from core.foundations.paths import cache_dir, data_root, resolve_data_dir
from core.foundations.plugins import PLUGIN_ENV
from core.foundations.task_registry import builtin_tasks
from core.foundations.user_files import (
    UPLOAD_FOLDER,
    UPLOAD_KINDS,
    parse_member_ids,
    read_user_file,
    store_upload,
    upload_path,
)
from core.jobs.own_model_audit import KIND as OWN_AUDIT
from core.jobs.own_model_audit import AuditParams, AuditRequest, restored_audit, stored_audit
from core.measurement.stats import Estimate
from core.tasks import available_tasks, get_task
from core.views.audit_report import audit_report_html
from core.views.plain import plain_markdown
from core.views.scores_report import roc_loglog_figure, scores_report_html
from ui.examples import show_record
from ui.nav import format_seconds, job_line
from ui.ownership import UPLOAD_BYTES_PER_SESSION, UPLOADS_PER_SESSION
from ui.results import show_results
from ui.session import is_lecturer, session_owner
from ui.shared import job_manager, run_owners, summary_of, upload_ledger

#: the layouts a user's data comes in: label → (task, dataset, preset to start from, what the box takes)
LAYOUTS = {
    "Images in class folders": ("image", "folder", "folder_quick",
                                "a folder holding one sub-folder per class (DIR/<class>/<file>.png|jpg)"),
    "A CSV table": ("tabular", "csv", "quick", "a .csv file with a header row; name its label column below"),
    "Parallel text": ("translation", "pairs", "pairs_cpu",
                      "a folder of <name>.<src> / <name>.<tgt> files with equal line counts"),
}
WAYS = ("Your data", "Your trained model", "A model you already have", "Just the scores", "Your architecture")
#: the kinds of a model a user already has: kind → (label, what the box takes)
MODEL_KINDS = {"torchvision": ("torchvision (by name + a safetensors state dict)", "model name, e.g. resnet18"),
               "timm": ("timm (by name + a safetensors state dict)", "model name, e.g. resnet10t"),
               "hf": ("Hugging Face (a save_pretrained folder)", "the folder under the data root"),
               "onnx": ("ONNX (scikit-learn, XGBoost, torch, … exported)", "the .onnx file under the data root")}
PREPROCESS_EXAMPLE = "num_classes = 10\n[image]\nchannels = 3\nscale = 255\n# resize = 36\n# crop = 32\n" \
                     "# mean = [0.4914, 0.4822, 0.4465]\n# std = [0.2470, 0.2435, 0.2616]\n" \
                     "# [table]  (a CSV)\n# columns = [\"age\", \"bmi\"]\n# label = \"outcome\"\n# id = \"patient\"\n"
RECIPE_EXAMPLE = "# optimizer = \"sgd\"\n# lr = 0.05\n# epochs = 30\n# batch_size = 128\n# references = 4\n"

st.title("Your model, your data")
st.caption("How much does **your** model leak, on **your** data, and what would a defense cost you? Point the "
           "explorer at a local folder or file under the data root, bring trained weights, or just a file of scores. "
           "Nothing leaves this machine; the layouts and caps are in docs/your_data.md.")

try:
    root = data_root()
except MIAError as exc:
    st.error(plain_markdown(exc))
    st.stop()

way = st.radio("What do you bring?", WAYS, horizontal=True, key="yours:way")


def layout_config(arch: str, layout: str, path_text: str, extra: dict) -> ExperimentConfig:
    """The config a run of ``layout`` on ``path_text`` would use (a preset of the layout's task plus the path)."""
    task_name, dataset, preset, _ = LAYOUTS[layout]
    task = get_task(task_name)
    preset = preset if preset in task.presets else "quick"
    path = str(resolve_data_dir(path_text))  # confined to the data root; a link leading out is refused
    return task.make_config(arch, preset, {"dataset": dataset, "data_dir": path, **extra})


@st.cache_data(max_entries=16, show_spinner="Reading the data…")
def cached_preview(config_hash: str, _cfg: ExperimentConfig) -> DataPreview:
    return preview_data(_cfg)


def data_inputs(key: str) -> tuple[str, str, dict] | None:
    """The layout, path and layout-specific settings a user picks (None until a path is given)."""
    c1, c2 = st.columns([1, 2])
    layout = c1.selectbox("Layout", list(LAYOUTS), key=f"{key}:layout")
    task_name, dataset, _, takes = LAYOUTS[layout]
    if dataset not in get_task(task_name).datasets:
        st.error(f"{layout} are not available in this build (the {task_name} task has no {dataset!r} data set).")
        st.stop()
    path_text = c2.text_input("Folder or file", key=f"{key}:path", placeholder=str(root / "my_data"),
                              help=f"{takes}. It must lie under the data root {str(root)!r} (set MIA_DATA_ROOT to "
                                   "change it); links leading out of it are refused.")
    extra: dict = {}
    if dataset == "csv":
        label = st.text_input("Label column", key=f"{key}:label", help="the CSV column the models predict")
        if label.strip():
            extra["label"] = label.strip()
    elif dataset == "pairs":
        l1, l2 = st.columns(2)
        extra["src_lang"] = l1.text_input("Source language code", value="en", key=f"{key}:src")
        extra["tgt_lang"] = l2.text_input("Target language code", value="de", key=f"{key}:tgt")
    elif dataset == "folder":
        extra["image_size"] = int(st.number_input("Resize images to (pixels a side)", 4, 256, 32, key=f"{key}:size"))
    if not path_text.strip():
        st.info(f"Enter {takes}.")
        return None
    return layout, typed_file(path_text), extra


def show_preview(cfg: ExperimentConfig) -> bool:
    """What was found and how a run would split it; False when the configured sizes do not fit."""
    try:
        p = cached_preview(cfg.config_hash, cfg)
    except MIAError as exc:
        st.error(plain_markdown(exc))
        return False
    st.success(f"**Found:** {plain_markdown(p.description)}")  # names from the user's files, as text
    cols = st.columns(4)
    cols[0].metric("records", f"{p.n_records:,}")
    cols[1].metric("victim's half", f"{p.victim_pool:,}", help="members and non-members of the victim come from here")
    cols[2].metric("attacker's half", f"{p.attacker_pool:,}", help="the shadow models train on this disjoint half")
    cols[3].metric("members / non-members", f"{p.members:,} / {p.nonmembers:,}")
    missing = p.info.get("missing_values")  # the task's free-form facts: a tabular source counts its gaps
    if missing:
        st.caption("Missing values per column: " + ", ".join(f"{plain_markdown(str(k))}: {v}"
                                                              for k, v in missing.items()))
    if p.split_problem:
        st.error(f"The configured sizes do not fit this data: {plain_markdown(p.split_problem)}")
        return False
    st.caption(f"{p.shadows} shadow models, each on {p.shadow_members:,} members and {p.shadow_nonmembers:,} "
               f"non-members of the attacker's half. A member list's id is {p.record_id_meaning}.")
    if p.examples:
        for k, (col, view, rid) in enumerate(zip(st.columns(len(p.examples)), p.examples, p.example_ids)):
            with col:
                # an image's caption names its role; a text record's lines do not, so the note does
                note = (f"id {plain_markdown(rid)}" if view.kind == "image"
                        else f"{plain_markdown(view.caption)} · id {plain_markdown(rid)}")
                show_record({cfg.arch: view}, key=f"preview:{k}", note=note)
    return True


def train_and_show(configs: list[ExperimentConfig], key: str) -> None:
    """Train the configs that are not cached (in the job queue), then draw their results."""
    manager = job_manager()
    summaries = {c.arch: summary_of(c) for c in configs}
    missing = [c for c in configs if summaries[c.arch] is None]
    if missing:
        jobs = [manager.job(c) for c in missing]
        active = [j for j in jobs if j is not None and j.active]
        failed = [j for j in jobs if j is not None and j.state == "failed"]
        for j in failed:
            st.error(f"The last run of {plain_markdown(j.label)} failed: {plain_markdown(j.error)}")
        if active:
            progress_panel(missing)
        elif st.button(f"Train & attack {', '.join(ARCH_LABELS[c.arch] for c in missing)}", type="primary",
                       key=f"{key}:train"):
            manager.submit(missing)
            st.rerun()
        else:
            st.caption("Training runs in a background worker with progress, ETA and Cancel (also in the sidebar); "
                       "results are cached, so the Defenses and Analyses pages list the run afterwards.")
    done = [s for s in (summaries[c.arch] for c in configs) if s is not None]
    if done:
        shown = [c for c in configs if summaries[c.arch] is not None]
        show_results(done, shown, {c.arch: {} for c in shown})
        st.page_link("app_pages/2_Defenses.py", label="Defend this model (Dirichlet k, Gaussian σ sliders) →")
        st.page_link("app_pages/4_Analyses.py", label="Why it leaks (Analyses) →")


@st.fragment(run_every=2.0)
def progress_panel(configs: list[ExperimentConfig]) -> None:
    manager = job_manager()
    jobs = [manager.job(c) for c in configs]
    if any(j is None or j.done for j in jobs):
        st.rerun(scope="app")
        return
    for job in jobs:
        if job is None:  # none: the check above
            continue
        cols = st.columns([6, 1])
        left = job.eta_s
        text = f"{plain_markdown(job.label)}: {job.state}" + (f" · about {format_seconds(left)} left" if left is not None else "")
        cols[0].progress(min(job.fraction, 1.0), text=text)
        if cols[1].button("Cancel", key=f"cancel:{job.id}"):
            manager.cancel(job)
            st.rerun(scope="app")


def attack_table(result: ScoresResult) -> list[dict]:
    """One row per attack as a reader takes it in: each number beside its interval, in one cell."""
    def ci(e: Estimate) -> str | None:
        if e.mean is None:
            return None
        low, high = e.ci_low, e.ci_high
        return f"{e.mean:.3f}" + (f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None else "")

    return [{"attack": a.name, "finding": a.finding, "AUC [95 % CI]": ci(a.auc),
             **{f"{r.label} [95 % CI]": ci(r.estimate) for r in a.low_fpr},
             "advantage [95 % CI]": ci(a.advantage), "ε̂ (95 % lower bound)": a.epsilon.lower_bound, "N": a.auc.n}
            for a in result.attacks]


def kept_upload(upload, kind: str) -> str | None:
    """An uploaded file kept under the data root (content-addressed, shared storage) and recorded as this session's
    (:class:`ui.ownership.UploadLedger`); its path, or None on an error said."""
    if upload is None:
        return None
    ledger, owner = upload_ledger(), session_owner()
    content = upload.getvalue()
    try:
        ledger.check_room(owner, str(upload_path(content, kind)), len(content))
        path = str(store_upload(content, kind))
    except MIAError as exc:
        st.error(plain_markdown(exc))
        return None
    ledger.add(owner, path, len(content))
    return path


def typed_file(text: str) -> str:
    """A typed file name, unless it names another session's upload (the upload folder is shared storage: a session
    names only its own uploads there, by uploading them)."""
    text = text.strip()
    if not text:
        return ""
    try:
        named = Path(os.path.normpath(root / Path(text).expanduser()))
    except (RuntimeError, ValueError):
        return text  # the reader says what is wrong with it
    if named.is_relative_to(root / UPLOAD_FOLDER) and not upload_ledger().owns(session_owner(), str(named)):
        st.error(f"{plain_markdown(repr(text))} lies in the app's upload folder and is not one of this session's "
                 "uploads: upload the file instead.")
        st.stop()
    return text


#: what the upload boxes say of their caps (the server's upload limit, .streamlit/config.toml's maxUploadSize,
#: is the largest of them: a file between two caps gets this page's message, not the browser's generic refusal)
def cap_text(kind: str) -> str:
    return (f"At most {UPLOAD_KINDS[kind][1] // 2**20} MiB; {UPLOADS_PER_SESSION} uploads and "
            f"{UPLOAD_BYTES_PER_SESSION // 2**20:,} MiB in all per session.")


def audit_table(result: AuditResult) -> list[dict]:
    rows = attack_table(result.scores)
    blind = {c.a: c for c in result.scores.comparisons if c.b == "blind"}
    for row in rows:
        c = blind.get(row["attack"])
        row["AUC − blind [95 % CI]"] = None if c is None else (
            f"{c.difference.mean:+.3f} [{c.difference.ci_low:+.3f}, {c.difference.ci_high:+.3f}]")
    return rows


def interval(e: Estimate | None, digits: int = 3) -> str:
    """A number beside its 95 % interval, in one cell ("—" where there is none)."""
    if e is None or e.mean is None or e.mean != e.mean:
        return "—"
    if e.ci_low is None or e.ci_high is None:
        return f"{e.mean:.{digits}f}"
    return f"{e.mean:.{digits}f} [{e.ci_low:.{digits}f}, {e.ci_high:.{digits}f}]"


class _NotStored(Exception):
    """Raised inside the cached reader so that "not stored yet" is never memoised."""


@st.cache_resource(max_entries=8, show_spinner=False)
def _stored_of(folder: str, key: str, _request: AuditRequest) -> tuple[dict, dict, AuditResult]:
    stored = stored_audit(_request)
    if stored is None:
        raise _NotStored
    return stored


def stored_of(request: AuditRequest) -> tuple[dict, dict, AuditResult] | None:
    """The stored audit of ``request`` (its JSON, kept arrays and typed result), read from the cache once per server,
    cache folder and request (a rerun does not parse it again); None while there is none."""
    try:
        return _stored_of(str(cache_dir()), request.config_hash, request)
    except _NotStored:
        return None


@st.cache_resource(max_entries=2, show_spinner="Loading your model and records for the what-ifs (nothing retrained)…")
def restored_audit_of(folder: str, key: str, _request: AuditRequest, _doc: dict, _kept: dict) -> AuditResult:
    """The stored audit ``key`` with its what-ifs back (:func:`core.jobs.own_model_audit.restored_audit`): the model loaded
    once per result and cache folder, shared by the sessions that see it."""
    return restored_audit(_request, _doc, _kept)


@st.cache_resource(max_entries=16, show_spinner="Answering every query again through the defense…")
def what_if_of(folder: str, key: str, mechanism: str, value: float, _restored: AuditResult
               ) -> tuple[AuditResult, Estimate | None]:
    """One what-if of the stored audit ``key`` (every attack again, no retraining) and its utility loss's interval."""
    defended = _restored.gaussian(value) if mechanism == "gaussian" else _restored.dirichlet(value)
    return defended, utility_loss_estimate(_restored, defended)


def what_if_rows(undefended: AuditResult, defended: AuditResult) -> list[dict]:
    """Every attack that ran, its defended AUC beside the undefended one (each with its interval)."""
    rows = []
    for a in undefended.attacks:
        moved = next((d for d in defended.attacks if d.name == a.name), None)
        rows.append({"attack": a.name, "undefended AUC [95 % CI]": interval(a.auc),
                     "defended AUC [95 % CI]": interval(moved.auc) if moved is not None else
                     f"did not run: {defended.not_run.get(a.name, 'not scored')}",
                     "change": f"{moved.auc.mean - a.auc.mean:+.3f}" if moved is not None else "—",
                     "finding (defended)": moved.finding if moved is not None else "—"})
    return rows


@st.fragment
def what_if_section(request: AuditRequest, doc: dict, kept: dict, result: AuditResult) -> None:
    """The Dirichlet k / Gaussian σ what-ifs on the audited model (a slider step reruns this alone)."""
    st.subheader("What if: defenses on your model, nothing retrained")
    torch_model = result.model.get("kind") != "onnx"  # σ perturbs weights: torch models only
    w1, w2 = st.columns(2)
    k = w1.select_slider("Dirichlet k (outputs)", [1000.0, 100.0, 10.0, 1.0, 0.1, 0.01], value=10.0, key="own:k")
    sigma = 0.0
    if torch_model:
        sigma = w2.select_slider("Gaussian σ (weights; above 0 it is shown instead of k)",
                                 [0.0, 1e-3, 3e-3, 1e-2, 3e-2, 0.1], value=0.0, key="own:sigma")
    else:
        w2.caption("Gaussian σ perturbs a torch model's weights; an ONNX graph is run, not perturbed (the Dirichlet k "
                   "acts on any model's outputs).")
    mechanism, value = ("gaussian", float(sigma)) if sigma > 0 else ("dirichlet", float(k))
    folder = str(cache_dir())
    try:
        restored = restored_audit_of(folder, request.config_hash, request, doc, kept)
        defended, loss = what_if_of(folder, request.config_hash, mechanism, value, restored)
    except MIAError as exc:
        st.error(plain_markdown(exc))
        return
    before, after = utility_estimates(restored), utility_estimates(defended)
    name = f"Dirichlet k = {value:g}" if mechanism == "dirichlet" else f"Gaussian σ = {value:g}"
    st.caption(f"{name}, one draw; the attacker is naive (its references and the pool's regressor saw undefended "
               "answers). Every attack that ran is scored again on the defended answers; the blind baseline never "
               "queries the model, so it does not move.")
    c1, c2, c3 = st.columns(3)
    if before and after:
        c1.metric("non-member accuracy (defended)", interval(after["nonmember_accuracy"]),
                  help=f"undefended {interval(before['nonmember_accuracy'])}; Clopper–Pearson 95 % intervals")
        c2.metric("member accuracy (defended)", interval(after["member_accuracy"]),
                  help=f"undefended {interval(before['member_accuracy'])}")
    defense = defended.defense
    assert defense is not None  # a what-if's result names its defense
    c3.metric("utility loss", interval(loss) if loss is not None else (
        f"{defense['utility_loss']:.3f}" if defense.get("utility_loss") is not None else "—"),
              help="1 − defended / undefended non-member accuracy; 95 % paired bootstrap over the non-members "
                   "(where the data allows one)")
    st.dataframe(what_if_rows(result, defended), hide_index=True, width="stretch")


@st.fragment(run_every=2.0)
def audit_progress(request: AuditRequest, params: AuditParams) -> None:
    """The audit job's progress (the worker's stage, fraction and ETA), with Cancel; the page reruns when it ends."""
    manager = job_manager()
    job = manager.job(request, OWN_AUDIT, params.to_dict())
    if job is None or job.done:
        st.rerun(scope="app")
        return
    cols = st.columns([6, 1])
    if job.state == "queued":
        place = manager.place(job)
        cols[0].progress(0.0, text=f"{plain_markdown(job.label)}: queued" + (f", #{place} in line" if place else ""))
    else:
        cols[0].progress(min(job.fraction, 1.0), text=f"{plain_markdown(job.label)} — {job_line(job)}")
    if cols[1].button("Cancel", key=f"own:cancel:{job.id}", help="Stops the audit at its next step (nothing is kept "
                                                                 "of a cancelled audit)"):
        manager.cancel(job)
        st.rerun(scope="app")


def audit_job(request: AuditRequest, params: AuditParams, stored_elsewhere: bool) -> None:
    """No audit of these inputs to show this session yet: its job's progress, its last failure, or the button that
    queues it (``stored_elsewhere``: another session audited the same inputs; the click makes this session one of
    its owners instead of auditing again)."""
    manager = job_manager()
    job = manager.job(request, OWN_AUDIT, params.to_dict())
    if job is not None and job.active:
        st.caption("The audit runs in a background worker (also listed in the sidebar); you can change pages "
                   "meanwhile.")
        audit_progress(request, params)
        return
    if job is not None and job.state == "failed":
        st.error(f"The last audit of these inputs failed: {plain_markdown(job.error)}")
    elif job is not None and job.state == "cancelled":
        st.info("The last audit of these inputs was cancelled.")
    elif job is not None and job.state == "done":
        st.warning("The audit finished but its result could not be read back from the cache; run it again.")
    if st.button("Run the audit", type="primary", key="own:run"):
        if stored_elsewhere:
            run_owners().add([request.config_hash], session_owner())
        else:
            manager.prewarm()
            try:
                manager.submit([request], OWN_AUDIT, params.to_dict())
            except MIAError as exc:  # the session's quota: one line, nothing queued
                st.error(plain_markdown(exc))
                return
        st.rerun()
    st.caption("The audit — the fit check, reference models trained by your recipe, every attack — runs in a "
               "background worker with progress, ETA and Cancel; its result is kept, so reopening this page with the "
               "same inputs shows it at once.")


def own_model_section() -> None:
    """A torchvision / timm / Hugging Face / ONNX model audited on its own declared preprocessing (core.audit), in
    the job queue (core.jobs.own_model_audit)."""
    st.markdown("Your model **as you have it** — no retraining into our architectures, and **your** preprocessing, "
                "declared below as data (never ours): every attack with its 95 % interval beside the **blind "
                "baseline** (what the records alone give, without the model), the risk at a chosen FPR, and the "
                "Dirichlet / Gaussian what-ifs on your model. Code never comes from this page: an `nn.Module` is "
                "audited from Python (`core.audit.audit`), docs/your_data.md.")
    kind = st.selectbox("Kind", list(MODEL_KINDS), format_func=lambda k: MODEL_KINDS[k][0], key="own:kind")
    c1, c2 = st.columns(2)
    target = c1.text_input("Model", key="own:target", placeholder=MODEL_KINDS[kind][1]).strip()
    weights = None
    if kind in ("torchvision", "timm"):
        weights_text = c2.text_input("Weights (.safetensors) under the data root", key="own:weights")
        weights = kept_upload(c2.file_uploader("…or upload it", type=["safetensors"], key="own:weights_up"),
                              "weights") or typed_file(weights_text)
    d1, d2 = st.columns(2)
    data = d1.text_input("Records: a folder of class folders, or a CSV, under the data root", key="own:data").strip()
    members_text = d2.text_input("Member list (.txt) under the data root", key="own:members")
    members = kept_upload(d2.file_uploader("…or upload it", type=["txt"], key="own:members_up"),
                          "members") or typed_file(members_text)
    p1, p2 = st.columns(2)
    pre_text = p1.text_area("Preprocessing the model was trained with (TOML)", PREPROCESS_EXAMPLE, height=220,
                            key="own:pre")
    recipe_text = p2.text_area("Training recipe, for reference models (TOML; empty: none — not for ONNX)",
                               RECIPE_EXAMPLE, height=220, key="own:recipe")
    if not (target and data and members and (weights or kind in ("hf", "onnx"))):
        st.info("Give the model, " + ("its weights, " if kind in ("torchvision", "timm") else "") +
                "the records and the member list.")
        return
    try:  # the roles first: how many records each gets, before anything trains
        # every path made absolute under the data root (a relative one is the root's, not the server's folder)
        params = AuditParams.from_dict({"spec": f"{kind}:{target}", "weights": weights or None, "data": data,
                                        "members": members, "preprocess": pre_text, "recipe": recipe_text})
        pre, _ = params.parsed()
        records = read_records(params.data, pre, root=str(root))
        roles = assign_roles(records, parse_member_ids(read_user_file(params.members, "members", 32 * 2**20)), None, 0)
        request = AuditRequest.of(params)
    except MIAError as exc:
        st.error(plain_markdown(exc))
        return
    st.success(f"{roles.n_records:,} records: **{len(roles.members):,} members**, **{len(roles.nonmembers):,} "
               f"non-members** audited (as many as the members, at most half of the others), **{len(roles.pool):,}** "
               f"in the attacker's pool (quantile regression needs 20).")
    stored = stored_of(request)
    if stored is None or not run_owners().visible(request.to_dict(), request.config_hash, session_owner(),
                                                  is_lecturer()):
        audit_job(request, params, stored_elsewhere=stored is not None)
        return
    doc, kept, result = stored
    st.markdown(f"**The model on its own members:** {plain_markdown(result.check.message)}.")
    for note in result.model["notes"]:  # names from the user's files: data, never markup
        st.caption(plain_markdown(note))
    if result.blind.differs:
        st.warning(result.blind.warning)
    st.markdown(f"**Blind baseline** (the records alone, never the model): AUC {result.blind.auc.mean:.3f} "
                f"[{result.blind.auc.ci_low:.3f}, {result.blind.auc.ci_high:.3f}].")
    st.dataframe(audit_table(result), hide_index=True, width="stretch")
    for name, why in result.not_run.items():
        st.caption(plain_markdown(f"{name} did not run: {why}"))
    if result.risk:
        st.subheader(f"Risk at {result.risk[0].fpr:.0%} FPR, membership prior {result.risk[0].prior:.3f}")
        st.dataframe([{"attack": r.attack, "TPR": f"{r.tpr.mean:.3f} [{r.tpr.ci_low:.3f}, {r.tpr.ci_high:.3f}]",
                       "precision of flagged records": f"{r.precision.mean:.3f} [{r.precision.ci_low:.3f}, "
                                                       f"{r.precision.ci_high:.3f}]",
                       "members exposed": f"{r.members_exposed.mean:.1f} [{r.members_exposed.ci_low:.1f}, "
                                          f"{r.members_exposed.ci_high:.1f}]"} for r in result.risk],
                     hide_index=True, width="stretch")
    st.plotly_chart(roc_loglog_figure(result.scores), width="stretch")
    what_if_section(request, doc, kept, result)
    st.download_button("Download the report (HTML)", audit_report_html(result), file_name="audit_report.html",
                       mime="text/html")
    st.download_button("Download the JSON", result.to_json(), file_name="audit.json", mime="application/json")


# ---------------------------------------------------------------------------- the ways
if way == "Your data":
    st.markdown("Our FFNN and RNN of matched size are trained on **your data** (victim and the attacker's shadow "
                "models on disjoint halves), then every attack runs, as for the built-in tasks.")
    picked = data_inputs("data")
    if picked is None:
        st.stop()
    layout, path_text, extra = picked
    try:
        configs = [layout_config(arch, layout, path_text, extra) for arch in ("ffnn", "rnn")]
    except MIAError as exc:
        st.error(plain_markdown(exc))
        st.stop()
    if show_preview(configs[0]):
        train_and_show(configs, "data")

elif way == "Your trained model":
    st.markdown("Your trained model **is the victim**: it is loaded, not trained. The attacker trains its shadow "
                "models with the same recipe on records your model did not see. Give the weights (safetensors, the "
                "state_dict of our FFNN or RNN for the data) and the member list (one record id a line: the records "
                "your model trained on). Every record not listed counts as a non-member.")
    source = st.radio("Data", ["A built-in data set", "Your data"], horizontal=True, key="model:source")
    arch = st.radio("Your model's architecture", ["ffnn", "rnn"], format_func=ARCH_LABELS.get, horizontal=True,
                    key="model:arch")
    if source == "Your data":
        picked = data_inputs("model")
        if picked is None:
            st.stop()
        layout, path_text, extra = picked
    else:
        builtin = st.selectbox("Task", [t for t in available_tasks() if t in builtin_tasks()], key="model:task")
    w1, w2 = st.columns(2)
    weights_text = w1.text_input("Weights file (.safetensors) under the data root", key="model:weights")
    weights_upload = w1.file_uploader("…or upload it", type=["safetensors"], key="model:weights_up",
                                      help=cap_text("weights"))
    members_text = w2.text_input("Member list (.txt) under the data root", key="model:members")
    members_upload = w2.file_uploader("…or upload it", type=["txt"], key="model:members_up", help=cap_text("members"))
    weights = kept_upload(weights_upload, "weights") or typed_file(weights_text)
    members = kept_upload(members_upload, "members") or typed_file(members_text)
    if not (weights and members):
        st.info("Give both the weights and the member list.")
        st.stop()
    user = {"target_weights": weights, "members": members, "attack_epochs": ()}
    try:
        if source == "Your data":
            cfg = layout_config(arch, layout, path_text, {**extra, **user})
        else:
            cfg = get_task(builtin).make_config(arch, "quick", user)
    except MIAError as exc:  # weights for another architecture, unknown ids, a list too short: one line
        st.error(plain_markdown(exc))
        st.stop()
    if show_preview(cfg):
        train_and_show([cfg], "model")

elif way == "A model you already have":
    own_model_section()

elif way == "Just the scores":
    st.markdown("No model at all: a file with one row per record — `member` (0/1), the target model's `loss` (or "
                "`logit_*` columns), optionally `label`, reference models' losses (`ref_*`) and a `slice` column. "
                "Threshold attacks (thresholds cross-fitted: never chosen on the records they decide), LiRA and RMIA "
                "when references are given, ROC, TPR at low FPR and ε̂, each with its 95 % interval. The format: "
                "docs/your_data.md, 'Just the scores'.")
    s1, s2 = st.columns(2)
    path_text = s1.text_input("Scores file (.csv or .npz) under the data root", key="scores:path")
    upload = s2.file_uploader("…or upload it", type=["csv", "npz"], key="scores:upload", help=cap_text("scores_csv"))
    path = None
    if upload is not None:
        path = kept_upload(upload, "scores_npz" if upload.name.lower().endswith(".npz") else "scores_csv")
    elif path_text.strip():
        path = typed_file(path_text)
    if not path:
        st.stop()

    @st.cache_data(max_entries=8, show_spinner="Scoring (bootstrap intervals over records)…")
    def scored(p: str, stamp: float) -> ScoresResult:
        return score_file(p)

    try:
        stamp = Path(path).stat().st_mtime if Path(path).is_absolute() else 0.0
        result = scored(path, stamp)
    except (MIAError, OSError) as exc:
        st.error(plain_markdown(exc))
        st.stop()
    st.success(f"{result.n_records:,} records ({result.n_members:,} members, {result.n_nonmembers:,} non-members), "
               f"{result.n_references} reference model(s).")
    for note in result.notes:
        st.caption(plain_markdown(note))  # may name the file's columns
    st.dataframe(attack_table(result), hide_index=True, width="stretch")
    st.caption("Each number with its 95 % bootstrap interval over the records (N). finding: *leak* when the AUC's "
               "interval lies above 0.5, *inconclusive* when it holds 0.5. ε̂: a 95 % lower bound on the ε of any "
               "DP guarantee the training could have (threshold chosen on one half of the records, bound on the other).")
    st.plotly_chart(roc_loglog_figure(result), width="stretch")
    if result.slices:
        st.subheader("Per slice")
        st.dataframe(result.slice_rows(), hide_index=True, width="stretch")
    st.download_button("Download the report (HTML)", scores_report_html(result), file_name="scores_report.html",
                       mime="text/html")

else:  # Your architecture
    st.markdown("Your own architecture comes in as a **plugin**: a Python file that defines a task (data, models, "
                "training) and registers it. For safety, code is loaded only from the server's own configuration — "
                f"the `{PLUGIN_ENV}` environment variable or an installed package's entry point — never from this "
                "page. The template `examples/plugin_task.py` runs as is; docs/your_data.md, 'Your architecture', "
                "walks through it.")
    plugins = [t for t in available_tasks() if t not in builtin_tasks()]
    if plugins:
        st.success("Plugin tasks loaded by this server: " + ", ".join(plugins) + ". They are listed on Train & attack, "
                   "Defenses and Analyses like the built-in tasks.")
        st.page_link("app_pages/1_Train_and_attack.py", label="Train & attack a plugin task →")
    else:
        st.info(f"This server loaded no plugin. Start it with `{PLUGIN_ENV}=/path/to/plugin_task.py streamlit run "
                "app.py` to add one.")
