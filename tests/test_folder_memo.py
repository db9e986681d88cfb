"""A task process keeps the data it read in memory; a user's folder named by the same data_dir under another data
root, or the same folder after its files changed, is other data and is read again (found when the image-folder
CLI test, recomputing the victim's accuracy in the test process, was served the 14-image 'pets' of an earlier
test instead of its own 24 images)."""
from pathlib import Path

from test_your_data_folders import TINY_IMAGE, write_class_folders, write_pairs

from core.tasks import get_task


def test_an_image_folder_under_another_root_or_with_other_files_is_read_again(tmp_path, monkeypatch):
    task = get_task("image")
    roots = [tmp_path / "a", tmp_path / "b"]
    write_class_folders(roots[0] / "pets", per_class=7)
    write_class_folders(roots[1] / "pets", per_class=12)
    sizes = []
    for root in roots:
        monkeypatch.setenv("MIA_DATA_ROOT", str(root))
        cfg = task.make_config("ffnn", "folder_quick", {"data_dir": "pets", **TINY_IMAGE})
        sizes.append(len(task.load(cfg).records.labels))
    assert sizes == [14, 24]
    assert task.load(cfg) is task.load(cfg)  # the same folder, unchanged: read once
    write_class_folders(roots[1] / "pets", per_class=13)  # one more image per class
    assert len(task.load(cfg).records.labels) == 26


def test_text_pairs_under_another_root_are_read_again(tmp_path, monkeypatch):
    task = get_task("translation")
    counts = []
    for root, n in ((tmp_path / "a", 40), (tmp_path / "b", 60)):
        write_pairs(Path(root) / "texts", "train", n=n)
        monkeypatch.setenv("MIA_DATA_ROOT", str(root))
        cfg = task.make_config("ffnn", "pairs_cpu", {"data_dir": "texts"})
        data = task.load(cfg)
        counts.append(len(data.victim_pool) + len(data.attacker_pool))
    assert counts[0] < counts[1]  # 40 pairs, then 60: not the first root's again
