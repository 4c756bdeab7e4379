"""`codeforest data fetch` + `data verify` of the six papers' files, their bytes taken from git copies of the pinned
repositories (`git show COMMIT:PATH`) and served at their raw.githubusercontent.com paths by a local server (this
machine reaches no GitHub). Usage: python fetch_from_mirrors.py MIRRORS_ROOT SHARED_DATA

MIRRORS_ROOT holds <owner>+<name>/repo git folders; SHARED_DATA the files the measurements used."""

import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from codeforest.datasets import DATASETS
from tests.data_server import DataServer

mirrors, shared = Path(sys.argv[1]), Path(sys.argv[2])
papers = [info for info in DATASETS.values() if info.format == "papers"]
with DataServer() as server, tempfile.TemporaryDirectory() as cache:
    for info in papers:
        file = info.files[0]
        repo = mirrors / file.repo.replace("/", "+") / "repo"
        data = subprocess.run(["git", "-C", str(repo), "show", f"{file.ref}:{file.path}"], capture_output=True,
                              check=True).stdout
        server.serve_github(file.repo, file.ref, file.path, data)
    env = {**os.environ, "CODEFOREST_DATA_MIRROR": server.url, "CODEFOREST_CACHE": cache, "CODEFOREST_DATA": ""}
    for command in (["fetch", *(i.name for i in papers)], ["verify"]):
        done = subprocess.run([sys.executable, "-m", "codeforest.cli", "data", *command], env=env, capture_output=True,
                              text=True)
        print(f"$ codeforest data {' '.join(command)}  (exit {done.returncode})\n{done.stdout}{done.stderr}")
    for info in papers:
        local = info.files[0].local
        fetched = hashlib.sha256((Path(cache) / "data" / local).read_bytes()).hexdigest()
        there = hashlib.sha256((shared / local).read_bytes()).hexdigest()
        print(f"{local}: fetched {fetched} {'==' if fetched == there else '!='} {shared.name}/{local} {there}")
