"""Models from the export pipelines users run (optimum, onnxruntime-genai, tf2onnx, skl2onnx, ...).

Each ``NAME.py`` here builds tiny random-weight models with one real tool, pinned in
``requirements/NAME.txt``, inside its own venv (``bash testmodels/pipelines/build.sh NAME``), and
writes them to ``NAME/`` with the manifest ``NAME.toml`` (tool versions; per model the file, kind,
held-out flag and the input shapes and values the pipeline's own runtime feeds). The models are
committed, so tests and CI need none of these tools; testmodels/corpus/ reads the manifests.
"""
