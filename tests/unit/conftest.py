"""Unit tests never download: CIFAR-10's automatic download is off unless a test turns it
on itself (tests/unit/test_download.py does, against a local server)."""
import os

os.environ["EQLIB_DOWNLOAD"] = "0"
