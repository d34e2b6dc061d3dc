"""What a benchmark run is asked to do: methods, base settings, output, ground-truth rule.

Shared by the run loop (``spider.bench.run``) and its storage (``spider.bench.store``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from spider.bench.methods import Method
from spider.eval.snapshot import GtChoice
from spider.settings import EngineSettings


@dataclass
class BenchConfig:
    """What to run: methods, the engine's base settings, where to write."""

    methods: list[Method]
    out: Path
    settings: EngineSettings = field(default_factory=EngineSettings)
    warm: bool = True  # also time a second (warm-cache) index build per instance
    progress: bool = True
    command: str = ""
    gt: GtChoice = "edit_functions"  # where ground truth comes from (see ground_truth)
