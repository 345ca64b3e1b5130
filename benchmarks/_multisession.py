"""Synthetic multi-session conversations with known answer turns (for recall benchmarks).

``generate(seed)`` builds, for each user, a conversation of several sessions a few days
apart. Every user has personal facts (a sister's city, an allergy, a pet, a job, a
trip, ...). Each fact is stated once in an early session and restated *in other words*
in a later one; the questions about it are worded differently again, and both
statements are its answer turns. Around them: chit-chat, assistant replies, and
distractor turns that share the question's words but do not answer it (a colleague's
sister, the neighbour's dog, a menu's allergy warning). Everything comes from one
``random.Random(seed)``, so a seed always gives the same data.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

NAMES = [
    "Maya", "Jonas", "Aiko", "Priya", "Tomas", "Leila", "Omar", "Sofia", "Niko", "Ines",
    "Kofi", "Hana", "Mateo", "Freya", "Ravi", "Elena", "Yusuf", "Clara", "Dmitri", "Zoe",
]  # fmt: skip
CITIES = [
    "Lisbon", "Oslo", "Kyoto", "Montreal", "Nairobi", "Valencia", "Tallinn", "Porto",
    "Seattle", "Krakow", "Dublin", "Hanoi", "Bergen", "Lyon", "Auckland", "Cusco",
]  # fmt: skip
FOODS = ["peanuts", "shellfish", "sesame", "gluten", "kiwi", "almonds", "eggs", "soy"]
DISHES = ["ramen", "paella", "lasagna", "pho", "falafel", "risotto", "tacos", "dumplings"]
ANIMALS = [("dog", "puppy"), ("cat", "kitten"), ("rabbit", "bunny"), ("parrot", "bird")]
PET_NAMES = ["Biscuit", "Pepper", "Mochi", "Ziggy", "Olive", "Waffles", "Juniper", "Noodle"]
JOBS = [
    ("nurse", "hospital", "patients"), ("architect", "studio", "buildings"),
    ("data analyst", "bank", "spreadsheets"), ("teacher", "school", "pupils"),
    ("chef", "restaurant", "kitchen"), ("pilot", "airline", "cockpit"),
]  # fmt: skip
COMPANIES = ["Northwind", "Bluefin", "Ardent", "Copperleaf", "Helix", "Larkspur"]
HOBBIES = [
    ("rock climbing", "bouldering at the gym"), ("sailing", "out on the boat"),
    ("pottery", "at the wheel shaping clay"), ("trail running", "running the hill trails"),
    ("birdwatching", "with binoculars spotting herons"), ("chess", "playing long chess games"),
]  # fmt: skip
LANGUAGES = ["Portuguese", "Japanese", "Swahili", "Norwegian", "Polish", "Vietnamese"]
CARS = ["Volvo", "Subaru", "Fiat", "Skoda", "Mazda", "Renault"]
MONTHS = ["March", "April", "May", "June", "September", "October", "November"]

FACTS: list[dict[str, object]] = [
    {
        "kind": "sister_city",
        "state": "My sister {name} moved to {city} last spring.",
        "restate": "{name} keeps sending me photos from {city}, she loves living there.",
        "questions": ["Which city did my sister move to?", "Where is {name} living now?"],
        "distract": [
            "My colleague's sister is visiting from {other_city} next week.",
            "Which city should we pick for the team offsite, maybe {other_city}?",
            "I live in a small flat now, the city is loud at night.",
        ],
    },
    {
        "kind": "allergy",
        "state": "I'm allergic to {food}, so please never suggest recipes with it.",
        "restate": "Remember that {food} makes me really sick, I react badly to it.",
        "questions": ["What am I allergic to?", "Which food makes me sick?"],
        "distract": [
            "The restaurant menu lists {other_food} with a food allergy warning.",
            "Do you have any recipe ideas for a quick dinner with rice?",
            "My meals this week were mostly pasta, I should avoid so much takeout.",
        ],
    },
    {
        "kind": "pet",
        "state": "We adopted a {animal} called {pet} from the shelter.",
        "restate": "{pet} chewed my slippers again, that naughty little {young}.",
        "questions": ["What is the name of the {animal} we adopted?", "Who chewed my slippers?"],
        "distract": [
            "My neighbour's pet {other_animal} barks at every delivery.",
            "What is the name of that bakery near the station?",
            "The shelter asked for volunteers on Sunday.",
        ],
    },
    {
        "kind": "job",
        "state": "I started working as a {job} at {company} this month.",
        "restate": "Long shift at the {place} today, the {object} kept me busy until late.",
        "questions": ["Where did I start working this month?", "Where do I work long shifts?"],
        "distract": [
            "My brother does work in sales, he hates the travel.",
            "A friend asked me what I do for fun on weekdays.",
            "The job fair at the convention centre was crowded.",
        ],
    },
    {
        "kind": "trip",
        "state": "I'm flying to {city} on {month} {day} for a conference.",
        "restate": "The talk I give in {city} is on the {day}th, the hotel is booked.",
        "questions": ["When am I flying to the conference?", "When is my talk in {city}?"],
        "distract": [
            "My cousin went on a trip to {other_city} for a wedding.",
            "The conference call with the landlord was moved to Friday.",
            "When is the next train to the airport usually?",
        ],
    },
    {
        "kind": "hobby",
        "state": "On weekends I go {hobby}, it clears my head.",
        "restate": "Spent all of Saturday {hobby_alt}, my arms are sore.",
        "questions": ["What do I do on weekends to clear my head?", "What made my arms sore?"],
        "distract": [
            "The weekend forecast says rain, so maybe a movie.",
            "What do you think of a new phone case?",
            "My favourite podcast released a new episode.",
        ],
    },
    {
        "kind": "language",
        "state": "I'm learning {language} with an app every morning.",
        "restate": "My {language} lessons are paying off, I ordered coffee without English.",
        "questions": ["Which language am I learning?", "Which lessons are paying off?"],
        "distract": [
            "Which programming language is best for a first project?",
            "I'm learning to bake sourdough bread.",
            "The app keeps crashing when I open the camera.",
        ],
    },
    {
        "kind": "dish",
        "state": "My favourite dish is {dish}, I could eat it every day.",
        "restate": "Found a great place for {dish} downtown, best meal in months.",
        "questions": ["What is my favourite dish?", "Where was the best meal in months?"],
        "distract": [
            "My favourite colour used to be green.",
            "What food should I bring to the potluck?",
            "I love most of the songs on that album.",
        ],
    },
    {
        "kind": "car",
        "state": "I drive an old {car} that I bought second hand.",
        "restate": "The {car} needed new brakes, the mechanic said it has years left.",
        "questions": ["What car do I drive?", "What did the mechanic say about my car?"],
        "distract": [
            "My partner wants to buy an electric car next year.",
            "Do you know a good mechanic for bicycles?",
            "I own too many houseplants, honestly.",
        ],
    },
    {
        "kind": "birthday",
        "state": "My birthday is on {month} {day}, I'm planning a dinner.",
        "restate": "I turn {age} on the {day}th of {month}, please remind me to book a table.",
        "questions": ["When is my birthday dinner?", "When do I turn {age}?"],
        "distract": [
            "My nephew's birthday party had a magician.",
            "When is the dentist appointment again?",
            "I'm planning to repaint the kitchen in {other_month}.",
        ],
    },
]

CHITCHAT = [
    "Good morning! How are you today?",
    "Can you help me plan my week?",
    "Thanks, that was really helpful.",
    "I slept badly last night.",
    "What's a good stretch for back pain?",
    "Remind me to water the plants.",
    "The weather is lovely today.",
    "I'm a bit tired, let's keep it short.",
    "Can you suggest a book for the train?",
    "I finally cleaned the garage.",
    "Let's talk about something else.",
    "Do you think I should take a nap?",
]
# Everyday first-person filler, as informative-looking as the facts (numbers, "I love",
# "always"), so an importance heuristic cannot tell the answer turns apart by style.
OPENERS = ["I always", "I never", "Honestly I love to", "I need to", "My plan is to",
           "I really want to", "Yesterday I wanted to", "I prefer to", "We must"]  # fmt: skip
ACTIVITIES = [
    "water the plants", "call the plumber", "finish the quarterly report", "fix the bike",
    "clean the garage", "walk {n} km", "read a chapter", "sort the photos", "bake bread",
    "reply to my emails", "pay the electricity bill", "pack the lunch boxes",
    "visit my grandmother", "repaint the fence", "try a new podcast", "go to bed early",
]  # fmt: skip
WHENS = ["before work", "after dinner", "on Tuesday", "at {n} o'clock", "this week",
         "every evening", "before the holidays", "when it stops raining"]  # fmt: skip
REASONS = ["", " because it matters to me", ", it is important", ", I don't want to forget",
           " since my week is busy", ", remember that"]  # fmt: skip
REPLIES = [
    "That sounds great, tell me more!",
    "Thanks for sharing that with me.",
    "Got it, I'll keep that in mind.",
    "Happy to help with that.",
    "Interesting! How do you feel about it?",
    "Sure, here is a short plan for today.",
    "I understand, that can be stressful.",
    "Noted. Anything else on your mind?",
]


@dataclass
class Turn:
    id: str
    user: str
    session: int
    role: str
    text: str
    at: datetime


@dataclass
class Question:
    user: str
    text: str
    evidence: list[str]
    kind: str


@dataclass
class Dataset:
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)

    def sessions_of(self, ids: list[str]) -> set[tuple[str, int]]:
        by_id = {t.id: t for t in self.turns}
        return {(by_id[i].user, by_id[i].session) for i in ids}


def _filler(rng: random.Random) -> str:
    text = " ".join((rng.choice(OPENERS), rng.choice(ACTIVITIES), rng.choice(WHENS)))
    text = (text + rng.choice(REASONS) + ".").replace("{n}", str(rng.randint(2, 12)))
    return text if rng.random() < 0.75 else rng.choice(CHITCHAT)


def _slots(rng: random.Random) -> dict[str, str]:
    animal, young = rng.choice(ANIMALS)
    job, place, obj = rng.choice(JOBS)
    hobby, hobby_alt = rng.choice(HOBBIES)
    city, other_city = rng.sample(CITIES, 2)
    food, other_food = rng.sample(FOODS, 2)
    month, other_month = rng.sample(MONTHS, 2)
    return {
        "name": rng.choice(NAMES),
        "city": city,
        "other_city": other_city,
        "food": food,
        "other_food": other_food,
        "animal": animal,
        "young": young,
        "other_animal": rng.choice([a for a, _ in ANIMALS if a != animal]),
        "pet": rng.choice(PET_NAMES),
        "job": job,
        "place": place,
        "object": obj,
        "company": rng.choice(COMPANIES),
        "hobby": hobby,
        "hobby_alt": hobby_alt,
        "language": rng.choice(LANGUAGES),
        "dish": rng.choice(DISHES),
        "car": rng.choice(CARS),
        "month": month,
        "other_month": other_month,
        "day": str(rng.randint(4, 28)),
        "age": str(rng.randint(25, 60)),
    }


def generate(
    seed: int = 20260,
    *,
    users: int = 10,
    sessions: int = 10,
    turns_per_session: int = 24,
    start: datetime = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc),
) -> Dataset:
    """Users x sessions x turns of conversation, with questions and their answer turns."""
    rng = random.Random(seed)
    data = Dataset()
    for u in range(users):
        user = f"user{u}"
        facts = rng.sample(FACTS, k=min(len(FACTS), 8))
        # each session: a list of (text, role, fact_kind | None, is_evidence)
        plan: list[list[tuple[str, str, str | None]]] = [[] for _ in range(sessions)]
        evidence_slots: dict[str, list[tuple[int, int]]] = {}
        slots_by_fact: dict[str, dict[str, str]] = {}
        for fact in facts:
            kind = str(fact["kind"])
            slots = _slots(rng)
            slots_by_fact[kind] = slots
            first = rng.randrange(0, sessions // 2)
            second = rng.randrange(first + 1, sessions)
            for s, template in ((first, fact["state"]), (second, fact["restate"])):
                plan[s].append((str(template).format(**slots), "user", kind))
            for template in fact["distract"]:  # type: ignore[attr-defined]
                s = rng.randrange(sessions)
                plan[s].append((str(template).format(**slots), "user", None))
        session_at = start
        for s in range(sessions):
            session_at += timedelta(days=rng.randint(2, 6), hours=rng.randint(0, 10))
            content = plan[s]
            rng.shuffle(content)
            while len(content) * 2 < turns_per_session:
                content.append((_filler(rng), "user", None))
            rng.shuffle(content)
            at = session_at
            for text, role, kind in content:
                for r, t in ((role, text), ("assistant", rng.choice(REPLIES))):
                    turn_id = f"{user}:s{s}:t{len(data.turns)}"
                    data.turns.append(Turn(turn_id, user, s, r, t, at))
                    at += timedelta(minutes=1)
                    if r == "user" and kind is not None:
                        evidence_slots.setdefault(kind, []).append((len(data.turns) - 1, s))
        for fact in facts:
            kind = str(fact["kind"])
            ids = [data.turns[i].id for i, _ in evidence_slots[kind]]
            for template in fact["questions"]:  # type: ignore[attr-defined]
                text = str(template).format(**slots_by_fact[kind])
                data.questions.append(Question(user, text, ids, kind))
    return data
