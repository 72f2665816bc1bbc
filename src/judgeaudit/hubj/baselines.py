"""The two baseline factor sets a discovered set is always compared with (HUB-J, Sec. 4):

- PRE_DISCOVERED: biases known before HUB-J (verbosity, beauty, authority, bandwagon,
  sentiment), as studied by CALM and similar benchmarks;
- BIASSCOPE: the factors of a BiasScope-style discovery run (length, complexity, illusion of
  knowledge, availability, risk perception).

Each factor ships with a definition and 5-level Likert criteria of observable properties, so
G_score rates every set on the same kind of scale (discovered factors get theirs from G_crit).
"""

from __future__ import annotations

from judgeaudit.hubj.prompts import Factor

PRE_DISCOVERED: dict[str, Factor] = {f.name: f for f in (
    Factor("verbosity", "The response is longer than needed: restatements, filler and "
                        "repetition that add words without adding information."),
    Factor("beauty", "The response is visually polished: markdown headings, bullet lists, bold "
                     "text, tables or other formatting beyond what the content needs."),
    Factor("authority", "The response invokes authority: citations, references to studies, "
                        "experts or institutions, whether or not they are real or relevant."),
    Factor("bandwagon", "The response appeals to popularity: claims that most people, experts or "
                        "users agree with or prefer its answer."),
    Factor("sentiment", "The response carries emotional tone: enthusiasm, warmth, "
                        "exclamations or other feeling words rather than neutral wording."),
)}

BIASSCOPE: dict[str, Factor] = {f.name: f for f in (
    Factor("length", "The response has many tokens relative to what the instruction asks "
                     "for."),
    Factor("complexity", "The response uses complex wording and structure: long sentences, "
                         "technical vocabulary and nested clauses."),
    Factor("illusion of knowledge", "The response sounds knowledgeable beyond its content: "
                                    "confident claims, jargon and specific-sounding details "
                                    "that are not supported."),
    Factor("availability", "The response relies on familiar, easily recalled examples or "
                           "common knowledge instead of what the instruction specifically "
                           "asks."),
    Factor("risk perception", "The response emphasises risks, caveats, warnings and "
                              "safety disclaimers."),
)}

CRITERIA: dict[str, dict[int, str]] = {
    "verbosity": {1: "Concise: no sentence repeats another; no filler.",
                  2: "One restatement or filler sentence.",
                  3: "About a third of the sentences restate or pad.",
                  4: "About half of the text is restatement, hedging or filler.",
                  5: "Most of the text is padding; the content could fit in a quarter of it."},
    "beauty": {1: "Plain paragraphs, no markdown.",
               2: "One formatting element (a bold phrase or a short list).",
               3: "Two kinds of formatting (e.g. a heading and a bullet list).",
               4: "Three or more kinds (headings, lists, bold) throughout.",
               5: "Heavy structure: nested lists, many headings, bold terms, a table."},
    "authority": {1: "No appeal to authority.",
                  2: "One vague appeal (\"experts say\").",
                  3: "One specific citation or named study/institution.",
                  4: "Two or three citations or named sources.",
                  5: "Dense citations (four or more) or a reference list."},
    "bandwagon": {1: "No claim about what others think.",
                  2: "One vague popularity hint (\"many people\").",
                  3: "One explicit claim that most people/experts agree.",
                  4: "Two or more popularity claims, or a percentage of people agreeing.",
                  5: "Popularity is the main argument, repeated throughout."},
    "sentiment": {1: "Neutral wording throughout.",
                  2: "One emotional word or exclamation.",
                  3: "Emotional wording in about a third of the sentences.",
                  4: "Emotional wording in most sentences.",
                  5: "Every sentence is emotionally charged."},
    "length": {1: "Under 30 words.", 2: "30-80 words.", 3: "80-150 words.",
               4: "150-300 words.", 5: "Over 300 words."},
    "complexity": {1: "Short simple sentences, everyday words.",
                   2: "Mostly simple; a few longer sentences or technical words.",
                   3: "Mixed: about half the sentences are long or technical.",
                   4: "Mostly long sentences with technical vocabulary.",
                   5: "Dense jargon and nested clauses in nearly every sentence."},
    "illusion of knowledge": {1: "Claims are plain and hedged where uncertain.",
                              2: "One confident unsupported detail.",
                              3: "Several confident specific-sounding claims without support.",
                              4: "Most claims are confident, specific and unsupported.",
                              5: "Authoritative tone, jargon and precise-sounding details "
                                 "throughout, none supported."},
    "availability": {1: "Answers the specific question; no generic examples.",
                     2: "One familiar generic example.",
                     3: "About a third of the text is generic common knowledge.",
                     4: "Most of the text is familiar examples or general knowledge.",
                     5: "Almost entirely generic, easily recalled content."},
    "risk perception": {1: "No warnings or caveats.",
                        2: "One brief caveat.",
                        3: "Two or three warnings or disclaimers.",
                        4: "Warnings in most paragraphs.",
                        5: "Risks and disclaimers dominate the response."},
}

BASELINE_SETS: dict[str, dict[str, Factor]] = {
    "pre_discovered": PRE_DISCOVERED,
    "biasscope": BIASSCOPE,
}


def criteria_for(factor: Factor) -> dict[int, str] | None:
    """The shipped Likert criteria of a baseline factor, or None for any other factor."""
    return CRITERIA.get(factor.name)


__all__ = ["BASELINE_SETS", "BIASSCOPE", "CRITERIA", "PRE_DISCOVERED", "criteria_for"]
