"""Where a write's time goes: the API's `jobpost_write_stage_seconds` histograms scraped
before and after a load phase, as a table of each stage's mean and approximate p50 / p99
(the upper bound of the bucket the quantile falls in)."""

from __future__ import annotations

from collections import defaultdict

import httpx
from prometheus_client.parser import text_string_to_metric_families

from runtime.write_stages import STAGES

Histograms = dict[str, dict[str, float]]  # stage -> {"count", "sum", "le=<bound>": cumulative}


def scrape(api_url: str) -> Histograms:
    text = httpx.get(f"{api_url}/metrics", timeout=10).text
    found: Histograms = defaultdict(dict)
    for family in text_string_to_metric_families(text):
        if family.name != "jobpost_write_stage_seconds":
            continue
        for sample in family.samples:
            stage = sample.labels["stage"]
            if sample.name.endswith("_bucket"):
                found[stage][f"le={sample.labels['le']}"] = sample.value
            elif sample.name.endswith("_sum"):
                found[stage]["sum"] = sample.value
            elif sample.name.endswith("_count"):
                found[stage]["count"] = sample.value
    return found


def _quantile_bound(delta: dict[str, float], q: float) -> str:
    count = delta.get("count", 0)
    buckets = sorted(((float(k[3:]), v) for k, v in delta.items() if k.startswith("le=")), key=lambda b: b[0])
    for bound, cumulative in buckets:
        if count and cumulative >= q * count:
            return "> 5 s" if bound == float("inf") else f"≤ {bound * 1000:g}"
    return "-"


def table(before: Histograms, after: Histograms) -> str:
    delta = {
        stage: {
            key: value - before.get(stage, {}).get(key, 0.0) for key, value in after.get(stage, {}).items()
        }
        for stage in STAGES
    }

    def mean_ms(stage: str) -> float:
        d = delta.get(stage, {})
        return 1000 * d.get("sum", 0.0) / d["count"] if d.get("count") else 0.0

    lines = ["| stage | writes | mean ms | p50 ms | p99 ms |", "| --- | --- | --- | --- | --- |"]
    for stage in STAGES:
        d = delta.get(stage, {})
        lines.append(
            f"| {stage} | {d.get('count', 0):.0f} | {mean_ms(stage):.1f} "
            f"| {_quantile_bound(d, 0.5)} | {_quantile_bound(d, 0.99)} |"
        )
    reply = mean_ms("sequenced") - mean_ms("to_sequencer") - mean_ms("transaction")
    lines.append(f"| reply read (sequenced - to_sequencer - transaction, means) | | {reply:.1f} | | |")
    return "\n".join(lines)
