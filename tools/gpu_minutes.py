"""Record each notebook's run time at one size from tools/run_course.py's summary, for the README course map.

    python tools/gpu_minutes.py --out OUT --size gpu [--into gpu-minutes.json]

Reads OUT/build/summary.json (run_course.py's results) and OUT/device.txt (nvidia-smi's name, memory, driver), and
writes OUT/gpu-minutes.json: the device, the size, the date and the minutes of each notebook (null where it failed
or was cut short, so a number is always a whole run). ``--into FILE`` also merges that record into FILE, one entry
per device: ``tools/device_check.sh`` passes the repository's ``gpu-minutes.json`` on a real GPU run (never on a
dry run), so the first device run fills the course map's GPU column.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path


def record(out: Path, size: str) -> dict:
    """The run under ``out`` as one record: device, size, date and minutes per notebook (None where not ok)."""
    results = json.loads((out / "build" / "summary.json").read_text())
    device = (out / "device.txt").read_text().strip().split(",")[0].strip()
    if not device:
        raise ValueError(f"{out / 'device.txt'} names no device")
    return {"device": device, "size": size, "date": datetime.date.today().isoformat(),
            "minutes": {r["notebook"]: round(r["minutes"], 2) if r["status"] == "ok" else None for r in results}}


def merge(path: Path, new: dict) -> dict:
    """``path``'s records with ``new`` in place of the one for the same device and size; written back, returned.
    Notebooks not run this time keep their earlier minutes."""
    found = json.loads(path.read_text()) if path.exists() else {"devices": []}
    earlier = next((r for r in found["devices"] if (r["device"], r["size"]) == (new["device"], new["size"])), None)
    if earlier is not None:
        new = {**new, "minutes": {**earlier["minutes"], **new["minutes"]}}
        found["devices"].remove(earlier)
    found["devices"] = sorted([*found["devices"], new], key=lambda r: (r["device"], r["size"]))
    path.write_text(json.dumps(found, indent=2) + "\n")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="tools/device_check.sh's output folder")
    parser.add_argument("--size", required=True, help="the COURSE_SIZE the notebooks ran at (gpu on a device)")
    parser.add_argument("--into", type=Path, help="a file of records per device to merge this run into")
    args = parser.parse_args()
    found = record(args.out, args.size)
    (args.out / "gpu-minutes.json").write_text(json.dumps(found, indent=2) + "\n")
    if args.into:
        merge(args.into, found)
    print(f"minutes per notebook on {found['device']} at {args.size} size: {args.out / 'gpu-minutes.json'}"
          + (f" (merged into {args.into})" if args.into else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
