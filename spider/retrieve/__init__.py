"""First-stage rankers: dense (bi-encoder), lexical (BM25) and their fusion."""

from spider.retrieve.fusion import ranks_from_scores, reciprocal_rank_fusion
from spider.retrieve.tokenize import code_tokens

__all__ = ["code_tokens", "ranks_from_scores", "reciprocal_rank_fusion"]
