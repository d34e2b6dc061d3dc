"""Offline-only data code, shared by measuring (``spider.bench``) and learning
(``spider.learn``): dataset rows (``dataset``), an instance's repository, index and ground
truth (``snapshot``), Recall/Acc/MRR@K (``metrics``). The product (the facade, the worker)
never imports it."""
