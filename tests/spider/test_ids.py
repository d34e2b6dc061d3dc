"""The dataset's id convention: enclosing functions dropped, classes kept, #n stripped."""

from __future__ import annotations

from spider.ids import dataset_id, dataset_id_map, graph_ids_for, normalise_id
from tests.spider.bench.helpers import graph_from_files

SOURCE = """\
class Response:
    def iter_content(self):
        def generate():
            pass
        return generate

    @property
    def ok(self):
        return True

    @ok.setter
    def ok(self, value):
        pass


def outer():
    class Local:
        def method(self):
            pass
    return Local
"""


def test_normalise_strips_duplicate_suffix() -> None:
    assert normalise_id("a.py:C.f#2") == "a.py:C.f"
    assert normalise_id(" a.py:f ") == "a.py:f"
    assert normalise_id("a.py:f#x") == "a.py:f#x"


def test_dataset_ids_follow_the_convention() -> None:
    g = graph_from_files({"requests/models.py": SOURCE})
    ids = dataset_id_map(g)
    assert ids["requests/models.py:Response.iter_content.generate"] == (
        "requests/models.py:Response.generate"
    )
    assert ids["requests/models.py:Response.ok#2"] == "requests/models.py:Response.ok"
    assert ids["requests/models.py:outer.Local.method"] == "requests/models.py:Local.method"
    assert dataset_id(g, "requests/models.py:outer") == "requests/models.py:outer"


def test_graph_ids_for_covers_every_duplicate() -> None:
    g = graph_from_files({"m.py": SOURCE})
    got = graph_ids_for({"m.py:Response.ok"}, dataset_id_map(g))
    assert got == {"m.py:Response.ok", "m.py:Response.ok#2"}
