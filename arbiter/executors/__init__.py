"""Executors: where games are played (this process, worker processes, a Dask cluster).

A run hands an executor `GameJob`s and hears back events (`jobs`); every host plays its
games with the same `GameWorker` (`game_worker.hosted`).
"""
