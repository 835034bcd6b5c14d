"""A data-generation pipeline checkpointed in a strata DatagenStore: items stream their steps
into the log, a crash is resumed from the fold, failures and a run overview are read back,
and a fan-out's item tree is walked.

    PYTHONPATH=build/release/python /usr/bin/python3 examples/python/datagen_store.py [DIR]

DIR is where the store goes (default: a new temporary directory).
"""

import sys
import tempfile

import strata
from strata import DatagenItemId

GENERATE = {"step_name": "generate", "step_kind": "leaf", "index": 0}
JUDGE = {"step_name": "judge", "step_kind": "leaf", "index": 0}
SPLIT = {"step_name": "split", "step_kind": "map_reduce", "index": 0}


def text(value):
    return {"kind": "str", "value": value}


def run_item(store, writer, problem, crash=False):
    """Generates an answer, judges it, ends the item; returns before judging on `crash`."""
    answer = {"name": "answer", "value": text(f"answer to {problem}")}
    store.append_checkpoint(writer.step_completed(GENERATE, [answer]))
    if crash:
        return  # the process dies here: the answer is checkpointed, the judging is not
    score = {"name": "score", "value": {"kind": "float", "value": 0.75}}
    store.append_checkpoint(writer.step_completed(JUDGE, [score]))
    store.append([writer.item_terminal("completed")])


def main(directory: str) -> None:
    run_id = strata.generate_id()
    with strata.DatagenStore.open(f"{directory}/datagen") as store:
        # Three source problems; the second one's process crashes after generating.
        for key in ["p1", "p2", "p3"]:
            item = DatagenItemId.from_source_key(key)
            writer = store.open_stream(item, run_id=run_id, writer_epoch=strata.generate_id(),
                                       query_tags={"dataset": "demo"})
            run_item(store, writer, key, crash=key == "p2")

        # After the crash: classify the roots, then resume what is still running.
        statuses = store.root_item_statuses(["p1", "p2", "p3", "p4"])
        print(f"statuses before resume: {statuses}")  # p4 never started: left out
        assert statuses == {"p1": "completed", "p2": "running", "p3": "completed"}
        folded = store.fold_item("p2")
        done = {step["step_name"] for step in folded["trajectory"]}
        print(f"p2 already did {sorted(done)} (attempt {folded['last_attempt']})")
        resumed = store.resume_stream("p2", run_id=run_id, writer_epoch=strata.generate_id())
        assert resumed.attempt == 1
        if "generate" in done:  # the fold says what to skip
            score = {"name": "score", "value": {"kind": "float", "value": 0.5}}
            store.append_checkpoint(resumed.step_completed(JUDGE, [score]))
            store.append([resumed.item_terminal("completed")])

        # A fan-out: p3 splits into two sub-items, one of which fails once.
        root = DatagenItemId.from_source_key("p3")
        for branch in range(2):
            child = root.child("split", branch)
            writer = store.open_stream(child, run_id=run_id, writer_epoch=strata.generate_id())
            if branch == 1:
                store.append([writer.item_failed(JUDGE, "TimeoutError", error_dump="judge slow")])
            image = {"name": "image", "value": {"kind": "blob", "bytes": bytes(range(16))}}
            store.append_checkpoint(writer.step_completed(GENERATE, [image]))
            store.append([writer.item_terminal("completed")])

        tree = store.item_tree("p3")
        print(f"p3 tree: {tree['roots']} -> {tree['nodes']['p3']['children']}")
        assert tree["nodes"]["p3"]["children"] == ["p3/split:0", "p3/split:1"]
        child = tree["nodes"]["p3/split:1"]["item"]
        assert store.load_blob(child, "image") == bytes(range(16))
        failures = store.item_failures("p3/split:1")
        print(f"p3/split:1 failed with {failures[0]['error_type']}: {failures[0]['error_dump']}")

        overview = store.overview()
        print(f"overview: {overview['items']} roots, {overview['completed']} completed, "
              f"{overview['failures']} failure(s), steps {overview['completed_steps']}")
        assert overview["completed"] == 3 and overview["failures"] == 1

    # A store reopened later (or by another process) folds the same items.
    with strata.DatagenStore.open(f"{directory}/datagen") as reopened:
        assert reopened.fold_item("p2")["fields"]["score"]["value"]["value"] == 0.5
    print("ok")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        with tempfile.TemporaryDirectory() as scratch:
            main(scratch)
