"""The controlled benchmark: N answers to one question, built from banks of true and false
statements, so quality is known exactly (quality = #true - #false) and verbosity is a
separate, nearly uncorrelated switch (every statement terse, or every statement carrying a
content-free authoritative elaboration clause).

A biased judge that rewards the elaboration ranks verbose weak answers above terse strong
ones; the true top-k is fixed by construction (a gap in quality at the k-th place), so recall
is exact. In the default ``balanced`` design the number of statements (hence the text length)
is also nearly uncorrelated with quality, so a judge's length preference is a pure bias here.
Plain dataclasses; ``judgeaudit.rank.pool.load_pool("builtin:controlled")`` serves it as a
ranking pool.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from judgeaudit.llm import features

# topic -> (question, true statements, false statements). Statements are self-contained
# sentences without the final period, so an elaboration clause can be appended.
BANKS: dict[str, tuple[str, list[str], list[str]]] = {
    "moon": (
        "What are some facts about the Moon?",
        [
            "The Moon orbits the Earth roughly once every 27 days",
            "The same side of the Moon always faces the Earth",
            "The Moon has no global magnetic field today",
            "Humans first walked on the Moon in 1969",
            "The Moon's gravity is about one sixth of the Earth's",
            "The Moon's tides are the main cause of ocean tides on Earth",
            "The Moon has almost no atmosphere",
        ],
        [
            "The Moon produces its own visible light",
            "The Moon is larger than the planet Mercury",
            "The far side of the Moon never receives sunlight",
            "The Moon is made mostly of ice",
            "The Moon is moving closer to the Earth every year",
        ],
    ),
    "water": (
        "What are some facts about water?",
        [
            "A water molecule is made of two hydrogen atoms and one oxygen atom",
            "Pure water freezes at 0 degrees Celsius at sea-level pressure",
            "Ice is less dense than liquid water",
            "Water boils at a lower temperature at high altitude",
            "Water has a high specific heat capacity",
            "Most of the Earth's water is salt water in the oceans",
            "Water expands when it freezes",
        ],
        [
            "Pure water is an excellent conductor of electricity",
            "Water boils at 50 degrees Celsius at sea level",
            "Ice sinks in liquid water",
            "Water molecules contain carbon",
            "Most of the Earth's fresh water is in rivers",
        ],
    ),
    "heart": (
        "What are some facts about the human heart?",
        [
            "The human heart has four chambers",
            "The left ventricle pumps blood into the aorta",
            "Heart valves keep blood flowing in one direction",
            "The heart muscle is supplied by the coronary arteries",
            "The sinoatrial node sets the normal heart rhythm",
            "A resting adult heart usually beats 60 to 100 times a minute",
            "The right side of the heart pumps blood to the lungs",
        ],
        [
            "The human heart has two chambers",
            "The heart is located in the abdomen",
            "Veins always carry oxygen-rich blood",
            "The heart stops beating during sleep",
            "The heart is made of skeletal muscle under voluntary control",
        ],
    ),
    "photosynthesis": (
        "What are some facts about photosynthesis?",
        [
            "Photosynthesis converts light energy into chemical energy",
            "Plants take in carbon dioxide during photosynthesis",
            "Oxygen is released as a by-product of photosynthesis",
            "Chlorophyll absorbs mostly red and blue light",
            "Photosynthesis in plants takes place in chloroplasts",
            "Glucose is one of the products of photosynthesis",
            "Some bacteria also carry out photosynthesis",
        ],
        [
            "Photosynthesis happens mainly in plant roots",
            "Plants release carbon dioxide as the main product of photosynthesis",
            "Chlorophyll absorbs green light most strongly",
            "Photosynthesis requires no water",
            "Only flowering plants can photosynthesise",
        ],
    ),
    "rome": (
        "What are some facts about ancient Rome?",
        [
            "Latin was the language of ancient Rome",
            "Julius Caesar was assassinated in 44 BC",
            "The Roman Empire was later divided into western and eastern halves",
            "Romans built aqueducts to carry water into cities",
            "Augustus was the first Roman emperor",
            "The Colosseum was used for gladiatorial games",
            "Roman roads connected much of the empire",
        ],
        [
            "The Roman Empire was founded in the 15th century",
            "Julius Caesar was the last Roman emperor",
            "The Romans invented the printing press",
            "Ancient Romans spoke mainly ancient Greek at home in Rome",
            "The Colosseum was built in Athens",
        ],
    ),
    "python": (
        "What are some facts about the Python programming language?",
        [
            "Python uses indentation to delimit blocks of code",
            "Python lists are mutable",
            "Python tuples are immutable",
            "Python was created by Guido van Rossum",
            "Python functions are first-class objects",
            "Python dictionaries map keys to values",
            "Python supports both object-oriented and functional styles",
        ],
        [
            "Python requires every variable's type to be declared",
            "Python strings are mutable",
            "Python was created by Dennis Ritchie",
            "Python code must be compiled to machine code before it can run",
            "Python lists can hold only one type of element",
        ],
    ),
}

# Content-free authoritative elaborations: they add length and confidence, not facts.
ELABORATIONS: list[str] = [
    "as is thoroughly documented in the authoritative literature on the subject",
    "a point on which leading experts in the field broadly agree",
    "which has been carefully established by rigorous and extensive study",
    "as confirmed by numerous highly respected authorities",
    "a fact that is widely recognised as fundamental by specialists",
    "as every serious and comprehensive treatment of the topic makes clear",
]


@dataclass
class ControlledItem:
    """One answer: its text and the ground truth behind it."""

    id: str
    text: str
    quality: int
    verbosity: int  # 1 = every statement elaborated, 0 = terse
    n_true: int
    n_false: int
    statements: list[str] = field(default_factory=list)

    @property
    def n_words(self) -> int:
        return len(self.text.split())


@dataclass
class ControlledPool:
    """A pool of answers to one question with an exact top-k (gap in quality at place k)."""

    topic: str
    question: str
    k: int
    items: list[ControlledItem]
    seed: int
    design: str = "balanced"

    @property
    def quality(self) -> np.ndarray:
        return np.array([it.quality for it in self.items], dtype=float)

    @property
    def verbosity(self) -> np.ndarray:
        return np.array([it.verbosity for it in self.items], dtype=float)

    @property
    def true_topk(self) -> np.ndarray:
        return np.sort(np.argsort(-self.quality, kind="stable")[: self.k])

    def covariates(self, names: tuple[str, ...] = ("verbosity",)) -> np.ndarray:
        """(N, M) covariates: ``verbosity`` (0/1 indicator), ``length`` (standardised word
        count; it partly tracks the number of statements, hence partly quality)."""
        cols = []
        for name in names:
            if name == "verbosity":
                cols.append(self.verbosity)
            elif name == "length":
                w = np.array([it.n_words for it in self.items], dtype=float)
                cols.append((w - w.mean()) / (w.std() or 1.0))
            else:
                raise ValueError(f"unknown covariate {name!r}; expected 'verbosity' or 'length'")
        return np.column_stack(cols)

    def to_dict(self) -> dict:
        return {"topic": self.topic, "question": self.question, "k": self.k, "seed": self.seed,
                "design": self.design, "items": [asdict(it) for it in self.items]}


def _sentence(stmt: str, elaboration: str | None) -> str:
    return f"{stmt}, {elaboration}." if elaboration else f"{stmt}."


DESIGNS: tuple[str, ...] = ("balanced", "classic")


def _draw_counts(rng: np.random.Generator, n_items: int, design: str
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(n_true, n_false) per item. ``balanced``: n_true ~ U{1..5}, n_false ~ U{0..4}, equal
    variances, so quality (n_true - n_false) and answer length (n_true + n_false statements)
    are uncorrelated in expectation. ``classic``: n_true ~ U{1..5}, n_false in {0, 1, 2}
    (p = .45/.35/.20): longer answers then carry more true statements (corr ~0.5)."""
    n_true = rng.integers(1, 6, size=n_items)
    if design == "balanced":
        n_false = rng.integers(0, 5, size=n_items)
    else:
        n_false = rng.choice(3, size=n_items, p=[0.45, 0.35, 0.20])
    return n_true, n_false


def _assemble(rng: np.random.Generator, topic: str, seed: int, trues: list[str],
              falses: list[str], n_true: np.ndarray, n_false: np.ndarray,
              verb: np.ndarray) -> list[ControlledItem]:
    items = []
    for t in range(len(n_true)):
        chosen = [(s, True) for s in rng.choice(trues, size=n_true[t], replace=False)]
        chosen += [(s, False) for s in rng.choice(falses, size=n_false[t], replace=False)]
        order = rng.permutation(len(chosen))
        sents = []
        for o in order:
            elab = ELABORATIONS[int(rng.integers(len(ELABORATIONS)))] if verb[t] else None
            sents.append(_sentence(str(chosen[o][0]), elab))
        items.append(ControlledItem(id=f"{topic}-{seed}-{t:02d}", text=" ".join(sents),
                                    quality=int(n_true[t] - n_false[t]),
                                    verbosity=int(verb[t]), n_true=int(n_true[t]),
                                    n_false=int(n_false[t]), statements=sents))
    return items


def build_controlled_pool(topic: str | None = None, n_items: int = 30, k: int = 5,
                          seed: int = 0, max_corr: float = 0.12, runners_up: int | None = None,
                          max_tries: int = 20000, design: str = "balanced") -> ControlledPool:
    """Assemble a pool: each item draws true and false statements of one topic
    (quality = #true - #false; counts per ``design``, see ``_draw_counts``), redrawn until the
    k-th and (k+1)-th qualities differ and at least ``runners_up`` items sit
    exactly one point below the k-th (near misses, which a length-biased judge can promote;
    the realistic hard case; default k, at most (n_items - k) // 3 in small pools);
    verbosity alternates within each quality level (random start)
    so |corr(quality, verbosity)| stays below ``max_corr``. With the ``balanced`` design
    |corr(quality, log #statements)| and |corr(quality, log(1 + words))| (the ``length``
    feature of judgeaudit.llm.features) must also stay below ``max_corr``, so text length,
    what a length-biased judge reacts to, is a spurious cue and not a proxy for quality.
    Deterministic in ``seed``."""
    rng = np.random.default_rng(seed)
    if design not in DESIGNS:
        raise ValueError(f"unknown design {design!r}; expected one of {DESIGNS}")
    if topic is None:
        topic = sorted(BANKS)[int(rng.integers(len(BANKS)))]
    if topic not in BANKS:
        raise ValueError(f"unknown topic {topic!r}; expected one of {sorted(BANKS)}")
    if not 0 < k < n_items:
        raise ValueError(f"need 0 < k < n_items, got k={k}, n_items={n_items}")
    question, trues, falses = BANKS[topic]
    # near misses: k by default, fewer in small pools (they must fit among the n - k others)
    need = min(k, max(1, (n_items - k) // 3)) if runners_up is None else runners_up
    for _ in range(max_tries):
        n_true, n_false = _draw_counts(rng, n_items, design)
        q = n_true - n_false
        qs = np.sort(q)[::-1]
        if qs[k - 1] == qs[k] or np.sum(q == qs[k - 1] - 1) < need:
            continue
        if design == "balanced" and abs(
                np.corrcoef(q, np.log(n_true + n_false))[0, 1]) >= max_corr:
            continue
        verb = np.zeros(n_items, dtype=int)
        for level in np.unique(q):
            idx = rng.permutation(np.nonzero(q == level)[0])
            start = int(rng.integers(2))
            verb[idx] = (np.arange(len(idx)) + start) % 2
        if verb.min() == verb.max() or abs(np.corrcoef(q, verb)[0, 1]) >= max_corr:
            continue
        items = _assemble(rng, topic, seed, trues, falses, n_true, n_false, verb)
        if design == "balanced":
            words = np.array([features.length(it.text) for it in items])
            if abs(np.corrcoef(q, words)[0, 1]) >= max_corr:
                continue
        break
    else:  # pragma: no cover - the constraints are loose; this guards odd arguments
        raise RuntimeError(f"could not build a pool with n_items={n_items}, k={k}")
    return ControlledPool(topic=topic, question=question, k=k, items=items, seed=seed,
                          design=design)
