"""The path of a codeforest dataset's file on this machine, printed (empty when the file is not here), for the
record.sh drivers, which run it with codeforest's interpreter: ``python data_file.py NAME``."""

import sys

from codeforest.datasets import dataset_info, locate
from codeforest.loading import find_data_dir

print(locate(dataset_info(sys.argv[1]).files[0], find_data_dir()) or "")
