"""Expansion, after ranking: the neighbours of the ranked centres and what selectors
admitted (``neighbours``: SpIDER's stages 1-2), the selectors and the fixed-budget exchange
(``select``: stage 3), and the one tidy pass over the final list (``tidy``)."""
