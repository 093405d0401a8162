"""python manage.py metaeval PROJECT@VERSION --metrics chrF++,spBLEU [--variant b|c|23|acc23|23-tc|acc23-tc] [--format json|text]
python manage.py metaeval PROJECT@VERSION --metrics chrF++,BLEU,TER --leaderboard [--level triplet|system]
    [--statistic pearson] [--resamples 1000] [--seed 0] [--alpha 0.05] [--format json|csv|text] [--latex]
python manage.py metaeval PROJECT@VERSION --metrics chrF++,BLEU --diagnostics [--tie-threshold 0] [--format json|text]
python manage.py metaeval PROJECT@VERSION --metrics chrF++,BLEU --export-evalset DIR
python manage.py metaeval --import-evalset ROOT --evalset NAME --lp en-de [--gold mqm] [--level sys|seg]

Meta-evaluates scored metrics against the release's predetermined human scores (SPEC §9). ``acc23-tc`` is acc23
with tie calibration (the WMT23 segment-level statistic; ``23-tc`` the same for τ_23): the metric-difference
threshold under which two scores count as tied is chosen exactly, per direction, to maximise the statistic."""

import json

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from core.corpus.selectors import corpus_limits
from exports.management.commands.score import find_release, names
from exports.metaeval import evalset, leaderboard
from exports.metaeval.domain import TAU_STATISTICS
from exports.metaeval.selectors import (
    MetaEvaluationError,
    export_evalsets,
    meta_evaluation_steps,
    release_diagnostics,
    release_leaderboard,
    release_meta_evaluation,
)
from exports.metaeval.statistics import STATISTICS


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
        parser.add_argument(
            "--leaderboard",
            action="store_true",
            help="rank the metrics with WMT's significance clusters, per direction and over all",
        )
        parser.add_argument("--statistic", default="pearson", choices=list(STATISTICS), help="leaderboard statistic")
        parser.add_argument("--resamples", type=int, default=1000, help="permutation resamples (leaderboard)")
        parser.add_argument("--seed", type=int, default=0, help="permutation seed (leaderboard)")
        parser.add_argument("--alpha", type=float, default=0.05, help="significance level of the clusters")
        parser.add_argument("--latex", action="store_true", help="the leaderboard as a LaTeX table")
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
        parser.add_argument("--import-evalset", metavar="ROOT", help="meta-evaluate an mt-metrics-eval EvalSet")
        parser.add_argument("--evalset", help="the EvalSet's name (a folder of ROOT), with --import-evalset")
        parser.add_argument("--lp", help="its language pair, e.g. en-de")
        parser.add_argument("--gold", default=evalset.HUMAN_SCORER, help="its human scores' name (mqm, esa, ...)")
        parser.add_argument(
            "--level", help="leaderboard: triplet (default) or system; --import-evalset: sys (default) or seg"
        )

    def _imported(self, opts) -> None:
        if not opts["evalset"] or not opts["lp"]:
            raise CommandError("--import-evalset needs --evalset NAME and --lp LP")
        try:
            evs = evalset.read(opts["import_evalset"], opts["evalset"], opts["lp"], corpus_limits())
            result = evalset.meta_evaluate(
                evs,
                opts["gold"],
                opts["level"] or "sys",
                opts["statistic"],
                resamples=opts["resamples"],
                seed=opts["seed"],
                alpha=opts["alpha"],
            )
        except (evalset.EvalSetError, ValueError, OSError) as exc:
            raise CommandError(str(exc)) from None
        if opts["format"] == "json":
            self.stdout.write(json.dumps(result, indent=2, ensure_ascii=False))
            return
        self.stdout.write(
            f"{result['evalset']} {result['lp']}: {result['statistic']} against {result['gold']} at "
            f"{result['level']} level, {result['n']} items, {result['systems']} systems"
        )
        for row in result["ranking"]:
            self.stdout.write(f"  {row['cluster']:>3}  {row['metric']:<30} {row['value']:.4f}")

    def _diagnostics(self, release, metrics, opts) -> None:
        try:
            result = release_diagnostics(
                release,
                metrics,
                tie_threshold=opts["tie_threshold"],
                resamples=opts["resamples"],
                seed=opts["seed"],
                alpha=opts["alpha"],
            )
        except (MetaEvaluationError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        if opts["format"] == "json":
            self.stdout.write(json.dumps(result, indent=2, ensure_ascii=False))
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
                    self.stdout.write(f"  {code} {row['error_type']:<28} n={row['n']:<5} spans: {prf}")

    def _export(self, release, metrics, opts) -> None:
        try:
            written = export_evalsets(release, metrics, opts["export_evalset"])
        except (MetaEvaluationError, ValueError, OSError) as exc:
            raise CommandError(str(exc)) from None
        for path in written:
            self.stdout.write(path)

    def _leaderboard(self, release, metrics, opts) -> None:
        if not 1 <= opts["resamples"] <= 100_000:
            raise CommandError("--resamples: between 1 and 100000")
        if not 0 < opts["alpha"] < 1:
            raise CommandError("--alpha: between 0 and 1")
        try:
            board = release_leaderboard(
                release,
                metrics,
                statistic=opts["statistic"],
                resamples=opts["resamples"],
                seed=opts["seed"],
                alpha=opts["alpha"],
                level=opts["level"] or "triplet",
            )
        except (MetaEvaluationError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        if opts["latex"]:
            self.stdout.write(leaderboard.as_latex(board), ending="")
        elif opts["format"] == "json":
            self.stdout.write(json.dumps(board, indent=2, ensure_ascii=False))
        else:
            self.stdout.write(leaderboard.FORMATS[opts["format"]](board), ending="")

    def handle(self, *args, **opts):
        if not 1 <= opts["resamples"] <= 100_000:
            raise CommandError("--resamples: between 1 and 100000")
        if opts["import_evalset"]:
            return self._imported(opts)
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
        if opts["format"] == "json":
            self.stdout.write(json.dumps(results, indent=2, ensure_ascii=False))
            return
        for r in results:
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
