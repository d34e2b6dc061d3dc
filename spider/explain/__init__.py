"""Explanation, the last step of one query: why each listed function is listed and how the
listed functions relate (``reasons``)."""
