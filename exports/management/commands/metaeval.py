"""python manage.py metaeval PROJECT@VERSION --metrics chrF++,spBLEU [--variant b|c|23|acc23|23-tc|acc23-tc] [--format json|text]
python manage.py metaeval PROJECT@VERSION --metrics chrF++,BLEU,TER --leaderboard [--level triplet|system]
    [--gold xqm|esa|mqm]
    [--statistic pearson] [--average-by none|item] [--replace-nans-with-zeros] [--perm-test scores|pairs]
    [--resamples 1000] [--seed 0] [--alpha 0.05] [--format json|csv|text] [--latex]
python manage.py metaeval PROJECT@VERSION --metrics chrF++,BLEU --diagnostics [--tie-threshold 0] [--format json|text]
python manage.py metaeval PROJECT@VERSION --metrics chrF++,BLEU --export-evalset DIR
python manage.py metaeval --import-evalset ROOT --evalset NAME --lp en-de [--gold mqm] [--level sys|seg]
    [--statistic acc23-tc] [--average-by none|item|sys] [--replace-nans-with-zeros] [--perm-test scores|pairs]
python manage.py metaeval --import-evalset ROOT --evalset NAME --lp en-de --span-gold mqm [--format json|text]
python manage.py metaeval --import-evalset ROOT --evalset NAME --task-set wmt24|wmt25 [--lps en-de,ja-zh] [--gold mqm]
    [--ref refA] [--primary BLEU,chrF] [--k 1000] [--seed 0] [--format text|csv|json] [--latex]
python manage.py metaeval PROJECT@VERSION --metrics chrF++,BLEU,TER --task-set wmt24 [--k 1000] [--format …] [--latex]

Meta-evaluates scored metrics against the release's predetermined human scores (SPEC §9). ``acc23-tc`` is acc23
with tie calibration (the WMT23 segment-level statistic; ``23-tc`` the same for τ_23): the metric-difference
threshold under which two scores count as tied is chosen exactly, per direction, to maximise the statistic.

``--task-set`` runs mt-metrics-eval's WMT24 or WMT25 task set (``exports.metaeval.tasksets``): per language pair (on a
release, per direction: its gold segments the items, a segment's pseudo translations the systems) soft pairwise
accuracy at system level and item-grouped tie-calibrated accuracy at segment level, each task's table (value,
cluster rank) and the overall one (weighted average rank and average value)."""

import json

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from core.corpus.selectors import corpus_limits
from exports.management.commands.score import find_release, names
from exports.management.common import refused_as_command_error
from exports.metaeval import evalset, leaderboard, tasksets
from exports.metaeval.domain import TAU_STATISTICS
from exports.metaeval.selectors import (
    MetaEvaluationError,
    export_evalsets,
    meta_evaluation_steps,
    release_diagnostics,
    release_leaderboard,
    release_meta_evaluation,
)
from exports.metaeval.statistics import AVERAGE_BY, PERMUTATION_TESTS, STATISTICS


def _draws(opts) -> dict:
    """The permutation tests' and bootstraps' draws as the options give them."""
    return {"resamples": opts["resamples"], "seed": opts["seed"], "alpha": opts["alpha"]}


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser):
        parser.add_argument("release", nargs="?", help="PROJECT@VERSION or release id")
        parser.add_argument("--metrics", help="comma-separated metric names as scored")
        parser.add_argument(
            "--variant",
            default="b",
            help=f"Kendall τ variant: {', '.join(TAU_STATISTICS)}; -tc: with tie calibration (acc23-tc is WMT23's segment-level statistic); default b",
        )
        parser.add_argument("--format", choices=["json", "csv", "text"], default="text", help="csv: --leaderboard only")
        self._leaderboard_arguments(parser)
        self._diagnostics_arguments(parser)
        self._evalset_arguments(parser)
        self._task_set_arguments(parser)

    @staticmethod
    def _leaderboard_arguments(parser) -> None:
        parser.add_argument(
            "--leaderboard",
            action="store_true",
            help="rank the metrics with WMT's significance clusters, per direction and over all",
        )
        parser.add_argument(
            "--statistic", default="pearson", choices=list(STATISTICS), help="leaderboard / EvalSet statistic"
        )
        parser.add_argument(
            "--average-by",
            default="none",
            choices=list(AVERAGE_BY),
            help="mt-metrics-eval's average_by: none (one group), item (per segment: on a release a gold segment's "
            "pseudo translations), sys (per system, EvalSets only)",
        )
        parser.add_argument(
            "--replace-nans-with-zeros",
            action="store_true",
            help="a group whose statistic is NaN (a constant vector) counts as 0 instead of being left out",
        )
        parser.add_argument(
            "--perm-test",
            choices=list(PERMUTATION_TESTS),
            help="scores (PermutationSigDiff) or pairs (PairwisePermutationSigDiff, tie-calibrated statistics); "
            "default pairs for acc23-tc/tau23-tc, scores otherwise",
        )
        parser.add_argument("--resamples", type=int, default=1000, help="permutation resamples (leaderboard)")
        parser.add_argument("--seed", type=int, default=0, help="permutation seed (leaderboard)")
        parser.add_argument("--alpha", type=float, default=0.05, help="significance level of the clusters")
        parser.add_argument("--latex", action="store_true", help="the leaderboard as a LaTeX table")

    @staticmethod
    def _diagnostics_arguments(parser) -> None:
        parser.add_argument(
            "--diagnostics",
            action="store_true",
            help="known-answer diagnostics: sensitivity per error type, additivity, heatmap, "
            "span precision/recall/F1 for metrics that mark error spans",
        )
        parser.add_argument(
            "--tie-threshold", type=float, default=0.0, help="a drop at or under it counts as undetected (diagnostics)"
        )
        parser.add_argument(
            "--export-evalset",
            metavar="DIR",
            help="write the release as mt-metrics-eval EvalSets under DIR, one per direction",
        )

    @staticmethod
    def _evalset_arguments(parser) -> None:
        parser.add_argument("--import-evalset", metavar="ROOT", help="meta-evaluate an mt-metrics-eval EvalSet")
        parser.add_argument("--evalset", help="the EvalSet's name (a folder of ROOT), with --import-evalset")
        parser.add_argument("--lp", help="its language pair, e.g. en-de")
        parser.add_argument(
            "--gold",
            help=f"--import-evalset: its human scores' name (mqm, esa, ...), default {evalset.HUMAN_SCORER}, with "
            "--task-set the test set's; --leaderboard: xqm (the predetermined quality, default), or esa or mqm "
            "(people's scores in the release)",
        )
        parser.add_argument(
            "--level", help="leaderboard: triplet (default) or system; --import-evalset: sys (default) or seg"
        )
        parser.add_argument(
            "--span-gold",
            metavar="RATING",
            help="--import-evalset: compare every other stored rating's error spans (human-scores/LP.*.seg.rating) "
            "with this one's: character F1, exact and partial match, WMT23 and WMT25 character F-scores",
        )

    @staticmethod
    def _task_set_arguments(parser) -> None:
        parser.add_argument("--task-set", choices=list(tasksets.TASK_SETS), help="run WMT's task set (mt-metrics-eval)")
        parser.add_argument("--lps", help="--task-set: comma-separated language pairs (default: every one there)")
        parser.add_argument("--k", type=int, default=1000, help="--task-set: permutation resamples per task (0: none)")
        parser.add_argument(
            "--ref", help="--task-set on an EvalSet: the standard reference (default: the test set's, else refA)"
        )
        parser.add_argument(
            "--primary", help="--task-set on an EvalSet: the primary metrics' base names (default: every metric)"
        )

    def _wrote_json(self, result, opts) -> bool:
        """With ``--format json``, the result written as JSON (and nothing else is to be written)."""
        if opts["format"] != "json":
            return False
        self.stdout.write(json.dumps(result, indent=2, ensure_ascii=False))
        return True

    def _emit_task_set(self, board: dict, opts) -> None:
        fmt = "latex" if opts["latex"] else opts["format"]
        self.stdout.write(tasksets.FORMATS[fmt](board), ending="" if fmt != "json" else "\n")

    def _imported_task_set(self, opts) -> None:
        import os

        if not opts["evalset"]:
            raise CommandError("--import-evalset needs --evalset NAME")
        root, name = opts["import_evalset"], opts["evalset"]
        sources = os.path.join(root, name, "sources")
        available = (
            sorted(f[: -len(".txt")] for f in os.listdir(sources) if f.endswith(".txt"))
            if os.path.isdir(sources)
            else []
        )
        if not available:
            raise CommandError(f"{sources}: no language pairs (LP.txt files)")
        primary = set(names(opts["primary"], "--primary")) if opts["primary"] else None
        with refused_as_command_error(evalset.EvalSetError, tasksets.TaskSetError, ValueError, OSError):
            lps = tasksets.check_lps(names(opts["lps"], "--lps") if opts["lps"] else None, available)
            definition = tasksets.get_task_set(opts["task_set"], lps, k=opts["k"], gold=opts["gold"])
            loaded = {lp: evalset.read(root, name, lp) for lp in lps}

            def scores_of(task):
                std = tasksets.standard(opts["task_set"], task.lang)
                return tasksets.evalset_scores(
                    loaded[task.lang],
                    task,
                    ref=opts["ref"] or std.ref,
                    gold=task.gold or std.gold,
                    outliers=std.outliers,
                    primary=primary,
                )

            result = tasksets.run(definition, scores_of, seed=opts["seed"], source=f"{name} ({', '.join(lps)})")
        self._emit_task_set(result.as_dict(), opts)

    def _release_task_set(self, release, metrics, opts) -> None:
        from exports.metaeval.taskset_selectors import release_task_set

        if not 0 <= opts["k"] <= tasksets.MAX_K:
            raise CommandError(f"--k: between 0 and {tasksets.MAX_K}")
        with refused_as_command_error(MetaEvaluationError, ValueError):
            board = release_task_set(release, metrics, opts["task_set"], k=opts["k"], seed=opts["seed"])
        self._emit_task_set(board, opts)

    def _imported(self, opts) -> None:
        if not opts["evalset"] or not opts["lp"]:
            raise CommandError("--import-evalset needs --evalset NAME and --lp LP")
        if opts["span_gold"]:
            return self._imported_spans(opts)
        with refused_as_command_error(evalset.EvalSetError, ValueError, OSError):
            evs = evalset.read(opts["import_evalset"], opts["evalset"], opts["lp"], corpus_limits())
            result = evalset.meta_evaluate(
                evs,
                opts["gold"] or evalset.HUMAN_SCORER,
                opts["level"] or "sys",
                opts["statistic"],
                average_by=opts["average_by"],
                replace_nans_with_zeros=opts["replace_nans_with_zeros"],
                test=opts["perm_test"],
                **_draws(opts),
            )
        if self._wrote_json(result, opts):
            return
        self.stdout.write(
            f"{result['evalset']} {result['lp']}: {result['statistic']} against {result['gold']} at "
            f"{result['level']} level, average_by {result['average_by']}, {result['n']} items, "
            f"{result['systems']} systems; {result['parameters']['perm_test']} permutation test"
        )
        for row in result["ranking"]:
            self.stdout.write(f"  {row['cluster']:>3}  {row['metric']:<30} {row['value']:.4f}")

    def _imported_spans(self, opts) -> None:
        with refused_as_command_error(evalset.EvalSetError, ValueError, OSError):
            ratings = evalset.read_ratings(opts["import_evalset"], opts["evalset"], opts["lp"])
            result = evalset.span_meta_evaluate(ratings, opts["span_gold"])
        if self._wrote_json(result, opts):
            return
        self.stdout.write(f"{result['evalset']} {result['lp']}: error spans against the {result['gold']} ratings")
        for row in result["ratings"]:
            figures = [("char F1", row["f1"])] + [(name, v["f1"]) for name, v in row["variants"].items()]
            text = " ".join(f"{name} {'–' if v is None else format(v, '.3f')}" for name, v in figures)
            self.stdout.write(f"  {row['rating']:<30} n={row['n']:<6} {text}")

    def _diagnostics(self, release, metrics, opts) -> None:
        with refused_as_command_error(MetaEvaluationError, ValueError):
            result = release_diagnostics(
                release,
                metrics,
                tie_threshold=opts["tie_threshold"],
                **_draws(opts),
            )
        if self._wrote_json(result, opts):
            return
        for metric, per_direction in result["metrics"].items():
            self.stdout.write(
                f"{metric}: drop from the reference per error type, category and severity (k = 1), detection rate"
            )
            for code, figures in per_direction.items():
                for row in figures["sensitivity"]:
                    kind = f"{row['category'] or '-'}/{row['severity'] or '-'}"
                    self.stdout.write(
                        f"  {code} {row['error_type']:<28} {kind:<21} n={row['n']:<5} drop {row['mean_drop']:.3f} "
                        f"[{row['low']:.3f}, {row['high']:.3f}] detected {row['detection_rate']:.2f}"
                    )
                for row in figures["additivity"]:
                    self.stdout.write(
                        f"  {code} {row['error_type']:<28} k={row['k']} n={row['n']:<5} drop "
                        f"{row['mean_drop']:.3f} vs sum of singles {row['mean_sum_of_single_drops']:.3f}"
                        f" (ratio {row['ratio']:.3f})"
                    )
                for row in figures.get("spans", []):
                    prf = " ".join(
                        f"{k} {'–' if row[k] is None else format(row[k], '.3f')}" for k in ("precision", "recall", "f1")
                    )
                    variants = " ".join(
                        f"{name} {'–' if v['f1'] is None else format(v['f1'], '.3f')}"
                        for name, v in row.get("variants", {}).items()
                    )
                    self.stdout.write(f"  {code} {row['error_type']:<28} n={row['n']:<5} spans: {prf}")
                    if variants:
                        self.stdout.write(
                            f"  {code} {row['error_type']:<28} n={row['n']:<5} span F1 variants: {variants}"
                        )

    def _export(self, release, metrics, opts) -> None:
        with refused_as_command_error(MetaEvaluationError, ValueError, OSError):
            written = export_evalsets(release, metrics, opts["export_evalset"])
        for path in written:
            self.stdout.write(path)

    def _leaderboard(self, release, metrics, opts) -> None:
        if not 1 <= opts["resamples"] <= 100_000:
            raise CommandError("--resamples: between 1 and 100000")
        if not 0 < opts["alpha"] < 1:
            raise CommandError("--alpha: between 0 and 1")
        with refused_as_command_error(MetaEvaluationError, ValueError):
            board = release_leaderboard(
                release,
                metrics,
                statistic=opts["statistic"],
                **_draws(opts),
                level=opts["level"] or "triplet",
                average_by=opts["average_by"],
                replace_nans_with_zeros=opts["replace_nans_with_zeros"],
                test=opts["perm_test"],
                gold=opts["gold"] or "xqm",
            )
        if opts["latex"]:
            self.stdout.write(leaderboard.as_latex(board), ending="")
        elif opts["format"] == "json":
            self.stdout.write(json.dumps(board, indent=2, ensure_ascii=False))
        else:
            self.stdout.write(leaderboard.FORMATS[opts["format"]](board), ending="")

    def handle(self, *args, **opts):
        if not 1 <= opts["resamples"] <= 100_000:
            raise CommandError("--resamples: between 1 and 100000")
        if opts["import_evalset"] and opts["task_set"]:
            return self._imported_task_set(opts)
        if opts["import_evalset"]:
            return self._imported(opts)
        if opts["release"] and opts["task_set"]:
            release = find_release(opts["release"])
            if opts["metrics"]:
                return self._release_task_set(release, names(opts["metrics"], "--metrics"), opts)
            from exports.metaeval.taskset_selectors import scored_metrics

            return self._release_task_set(release, scored_metrics(release), opts)
        if not opts["release"] or not opts["metrics"]:
            raise CommandError("give a release and --metrics (or --import-evalset ROOT)")
        release = find_release(opts["release"])
        metrics = names(opts["metrics"], "--metrics")
        if opts["leaderboard"]:
            return self._leaderboard(release, metrics, opts)
        if opts["format"] == "csv" or opts["latex"]:
            raise CommandError("--format csv and --latex are for --leaderboard")
        if opts["diagnostics"]:
            return self._diagnostics(release, metrics, opts)
        if opts["export_evalset"]:
            return self._export(release, metrics, opts)
        results = self._meta_evaluations(release, metrics, opts)
        if self._wrote_json(results, opts):
            return
        for r in results:
            self._write_meta_evaluation(r)

    def _meta_evaluations(self, release, metrics, opts) -> list[dict]:
        results = []
        # tqdm writes to stderr: --format json keeps stdout for the JSON alone
        # one step per direction (plus reading the multilingual systems and their study), per metric
        total = sum(len(meta_evaluation_steps(release, metric)) for metric in metrics)
        bar = tqdm(total=total, desc="meta-evaluation", unit="step", disable=opts["verbosity"] == 0)
        try:
            for metric in metrics:

                def advance(step: str, metric=metric) -> None:
                    bar.set_postfix_str(f"{metric}: {step}")
                    bar.update(1)

                results.append(release_meta_evaluation(release, metric, variant=opts["variant"], progress=advance))
        except (MetaEvaluationError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        finally:
            bar.close()
        return results

    def _write_meta_evaluation(self, r: dict) -> None:
        self.stdout.write(f"{r['metric']} ({r['better']} is better), Kendall {r['label']}")
        for row in r["triplet_level"]:
            system = r["system_level"].get(row["direction"])
            self.stdout.write(
                f"  {row['direction']}: triplet τ {row['tau']:.4f} (n={row['n']}"
                + (f", ε={row['epsilon']:.6g}" if row.get("epsilon") is not None else "")
                + ")"
                + (f", monolingual system τ {system:.4f}" if system is not None else "")
            )
        for row in r["cv"]:
            if row["cv"] is not None:
                self.stdout.write(
                    f"  level {row['level']}: cross-lingual CV {row['cv']:.4f} ({row['std']} std, {row['directions']} directions)"
                )
        m = r["multilingual"]
        if r.get("multilingual_error"):
            self.stdout.write(f"  multilingual systems: not computed ({r['multilingual_error']})")
        if m:
            test = f", paired t = {m['t']:.3f}, p = {m['p']:.3g}" if m["t"] is not None else f" ({m['note']})"
            self.stdout.write(
                f"  multilingual systems: τ plain {m['tau_plain']:.4f}, τ LGN {m['tau_lgn']:.4f} over {m['repetitions']} repetitions{test}"
            )
