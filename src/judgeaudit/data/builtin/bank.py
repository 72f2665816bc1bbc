"""The fact bank behind `builtin:facts`, `builtin:format` and `builtin:graded`.

Each fact is one easy, unambiguous question with its correct answer and one plausible wrong
answer, and a sentence template that states an answer. Facts whose answer is disputed or
recently changed (most populous country, capitals moved or shared between cities, number of
continents, ...) are left out on purpose: a judge must be able to know the right answer.
Counts are written as digits, so answer checks that compare numbers see them. Written for
this project.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Fact:
    topic: str
    question: str
    template: str  # one sentence with "{}" where the answer goes
    answer: str
    wrong: str
    # A short explanation that holds for the correct answer (for graded level 5), if any.
    why: str | None = None

    def statement(self, value: str) -> str:
        out = self.template.format(value)
        return out[:-1] if out.endswith("..") else out  # "Washington, D.C." ends a sentence


def sentence(answer: str) -> str:
    """A bare answer as a terse sentence: "canberra" -> "Canberra."; no doubled full stop."""
    out = answer[:1].upper() + answer[1:]
    return out if out.endswith(".") else out + "."


# (country, capital, a plausible wrong city)
CAPITALS = [
    ("Australia", "Canberra", "Sydney"), ("Canada", "Ottawa", "Toronto"),
    ("Brazil", "Brasilia", "Rio de Janeiro"), ("Turkey", "Ankara", "Istanbul"),
    ("Switzerland", "Bern", "Zurich"), ("New Zealand", "Wellington", "Auckland"),
    ("Japan", "Tokyo", "Osaka"), ("France", "Paris", "Lyon"), ("Germany", "Berlin", "Munich"),
    ("Italy", "Rome", "Milan"), ("Spain", "Madrid", "Barcelona"),
    ("Portugal", "Lisbon", "Porto"), ("the United Kingdom", "London", "Manchester"),
    ("Ireland", "Dublin", "Cork"), ("Belgium", "Brussels", "Antwerp"),
    ("Austria", "Vienna", "Salzburg"), ("Poland", "Warsaw", "Krakow"),
    ("Russia", "Moscow", "Saint Petersburg"), ("China", "Beijing", "Shanghai"),
    ("India", "New Delhi", "Mumbai"), ("Pakistan", "Islamabad", "Karachi"),
    ("Egypt", "Cairo", "Alexandria"), ("Kenya", "Nairobi", "Mombasa"),
    ("Nigeria", "Abuja", "Lagos"), ("Morocco", "Rabat", "Casablanca"),
    ("Argentina", "Buenos Aires", "Cordoba"), ("Chile", "Santiago", "Valparaiso"),
    ("Peru", "Lima", "Cusco"), ("Mexico", "Mexico City", "Guadalajara"),
    ("the United States", "Washington, D.C.", "New York City"), ("Norway", "Oslo", "Bergen"),
    ("Sweden", "Stockholm", "Gothenburg"), ("Finland", "Helsinki", "Tampere"),
    ("Denmark", "Copenhagen", "Aarhus"), ("Greece", "Athens", "Thessaloniki"),
    ("Hungary", "Budapest", "Debrecen"), ("the Czech Republic", "Prague", "Brno"),
    ("Vietnam", "Hanoi", "Ho Chi Minh City"), ("Thailand", "Bangkok", "Chiang Mai"),
    ("South Korea", "Seoul", "Busan"), ("Saudi Arabia", "Riyadh", "Jeddah"),
    ("Iran", "Tehran", "Isfahan"), ("Iraq", "Baghdad", "Basra"),
    ("Colombia", "Bogota", "Medellin"), ("Cuba", "Havana", "Santiago de Cuba"),
    ("Ukraine", "Kyiv", "Kharkiv"), ("Romania", "Bucharest", "Cluj-Napoca"),
    ("Bulgaria", "Sofia", "Plovdiv"), ("Iceland", "Reykjavik", "Akureyri"),
    ("Ethiopia", "Addis Ababa", "Dire Dawa"), ("Ghana", "Accra", "Kumasi"),
    ("Nepal", "Kathmandu", "Pokhara"), ("Bangladesh", "Dhaka", "Chittagong"),
    ("Jamaica", "Kingston", "Montego Bay"), ("Venezuela", "Caracas", "Maracaibo"),
    ("Scotland", "Edinburgh", "Glasgow"),
]

# (element, symbol, a plausible wrong symbol)
SYMBOLS = [
    ("gold", "Au", "Gd"), ("silver", "Ag", "Si"), ("iron", "Fe", "Ir"), ("sodium", "Na", "Sd"),
    ("potassium", "K", "P"), ("lead", "Pb", "Le"), ("copper", "Cu", "Co"),
    ("oxygen", "O", "Ox"), ("hydrogen", "H", "Hy"), ("carbon", "C", "Ca"),
    ("nitrogen", "N", "Ni"), ("helium", "He", "H"), ("calcium", "Ca", "C"),
    ("chlorine", "Cl", "Ch"), ("mercury", "Hg", "Me"), ("tin", "Sn", "Ti"),
    ("zinc", "Zn", "Zi"), ("sulfur", "S", "Su"), ("neon", "Ne", "N"),
    ("magnesium", "Mg", "Mn"),
]

# (unit asked for, "a"/"an" + larger unit, correct count, wrong count)
UNITS = [
    ("centimetres", "a metre", "100", "10"), ("metres", "a kilometre", "1000", "100"),
    ("grams", "a kilogram", "1000", "100"), ("minutes", "an hour", "60", "100"),
    ("seconds", "a minute", "60", "100"), ("hours", "a day", "24", "12"),
    ("days", "a week", "7", "5"), ("days", "a leap year", "366", "365"),
    ("months", "a year", "12", "10"), ("millilitres", "a litre", "1000", "100"),
    ("millimetres", "a centimetre", "10", "100"), ("inches", "a foot", "12", "10"),
    ("feet", "a yard", "3", "4"), ("ounces", "a pound", "16", "12"),
    ("years", "a century", "100", "1000"), ("years", "a decade", "10", "12"),
    ("years", "a millennium", "1000", "100"), ("items", "a dozen", "12", "10"),
    ("kilograms", "a tonne", "1000", "100"), ("degrees", "a right angle", "90", "180"),
    ("degrees", "a full circle", "360", "180"),
]

# (topic, question, template, answer, wrong)
OTHER: list[tuple[str, str, str, str, str]] = [
    # astronomy
    ("astronomy", "What is the largest planet in our solar system?",
     "The largest planet in our solar system is {}.", "Jupiter", "Saturn"),
    ("astronomy", "Which planet is closest to the Sun?",
     "The planet closest to the Sun is {}.", "Mercury", "Venus"),
    ("astronomy", "Which planet is known as the Red Planet?",
     "The planet known as the Red Planet is {}.", "Mars", "Venus"),
    ("astronomy", "Which planet is the third planet from the Sun?",
     "The third planet from the Sun is {}.", "Earth", "Mars"),
    ("astronomy", "What is the hottest planet in our solar system?",
     "The hottest planet in our solar system is {}.", "Venus", "Mercury"),
    ("astronomy", "Which planet is farthest from the Sun?",
     "The planet farthest from the Sun is {}.", "Neptune", "Uranus"),
    ("astronomy", "What is the smallest planet in our solar system?",
     "The smallest planet in our solar system is {}.", "Mercury", "Mars"),
    ("astronomy", "How many planets are in our solar system?",
     "There are {} planets in our solar system.", "8", "9"),
    ("astronomy", "What is the star at the centre of our solar system?",
     "The star at the centre of our solar system is {}.", "the Sun", "Sirius"),
    ("astronomy", "What is the name of the galaxy that contains our solar system?",
     "The galaxy that contains our solar system is {}.", "the Milky Way", "Andromeda"),
    ("astronomy", "Which planet has the storm called the Great Red Spot?",
     "The planet with the Great Red Spot is {}.", "Jupiter", "Saturn"),
    ("astronomy", "Which planet is famous for its large, bright rings?",
     "The planet famous for its large, bright rings is {}.", "Saturn", "Mars"),
    ("astronomy", "About how many days does Earth take to orbit the Sun?",
     "Earth takes about {} days to orbit the Sun.", "365", "30"),
    # science
    ("science", "At what temperature in degrees Celsius does water boil at sea level?",
     "At sea level, water boils at {} degrees Celsius.", "100", "50"),
    ("science", "At what temperature in degrees Celsius does water freeze?",
     "Water freezes at {} degrees Celsius.", "0", "10"),
    ("science", "How many chambers does the human heart have?",
     "The human heart has {} chambers.", "4", "3"),
    ("science", "How many bones are in the adult human body?",
     "The adult human body has {} bones.", "206", "306"),
    ("science", "Which gas do plants take in from the air for photosynthesis?",
     "For photosynthesis, plants take in {} from the air.", "carbon dioxide", "helium"),
    ("science", "Which gas do humans need to breathe in to stay alive?",
     "Humans need to breathe in {} to stay alive.", "oxygen", "helium"),
    ("science", "What is the largest organ of the human body?",
     "The largest organ of the human body is the {}.", "skin", "liver"),
    ("science", "How many legs does a spider have?", "A spider has {} legs.", "8", "6"),
    ("science", "How many legs does an insect have?", "An insect has {} legs.", "6", "8"),
    ("science", "Which mammal is able to truly fly?",
     "The mammal that is able to truly fly is the {}.", "bat", "penguin"),
    ("science", "What is the hardest natural substance?",
     "The hardest natural substance is {}.", "diamond", "gold"),
    ("science", "Which part of a plant cell carries out photosynthesis?",
     "Photosynthesis is carried out in the {}.", "chloroplast", "nucleus"),
    ("science", "Which force keeps us on the ground?",
     "The force that keeps us on the ground is {}.", "gravity", "magnetism"),
    ("science", "At what temperature in degrees Fahrenheit does water boil at sea level?",
     "At sea level, water boils at {} degrees Fahrenheit.", "212", "180"),
    ("science", "What is the normal human body temperature in degrees Celsius?",
     "The normal human body temperature is about {} degrees Celsius.", "37", "42"),
    ("science", "How many chromosomes does a typical human cell have?",
     "A typical human cell has {} chromosomes.", "46", "64"),
    ("science", "What is the largest animal on Earth?",
     "The largest animal on Earth is the {}.", "blue whale", "elephant"),
    ("science", "What is the fastest land animal?",
     "The fastest land animal is the {}.", "cheetah", "horse"),
    ("science", "What is the tallest animal?", "The tallest animal is the {}.", "giraffe",
     "camel"),
    ("science", "What do bees make from nectar?", "Bees make {} from nectar.", "honey",
     "milk"),
    ("science", "Which blood cells fight infections?",
     "The blood cells that fight infections are {} blood cells.", "white", "red"),
    ("science", "What is water called when it is frozen solid?",
     "When water is frozen solid it is called {}.", "ice", "steam"),
    ("science", "Which metal is strongly attracted to a magnet?",
     "The metal strongly attracted to a magnet is {}.", "iron", "copper"),
    ("science", "What is the boiling point of pure water in kelvin at sea level, roughly?",
     "Pure water boils at roughly {} kelvin at sea level.", "373", "273"),
    ("science", "What is the chemical formula of water?",
     "The chemical formula of water is {}.", "H2O", "CO2"),
    ("science", "What is the chemical formula of carbon dioxide?",
     "The chemical formula of carbon dioxide is {}.", "CO2", "H2O"),
    ("science", "What is the chemical name of table salt?",
     "The chemical name of table salt is {}.", "sodium chloride", "calcium carbonate"),
    ("science", "What is the pH of pure water at room temperature?",
     "The pH of pure water at room temperature is {}.", "7", "3"),
    ("science", "Which organ pumps blood around the human body?",
     "The organ that pumps blood around the human body is the {}.", "heart", "lung"),
    ("science", "Which organ do humans use to breathe?",
     "Humans breathe with their {}.", "lungs", "kidneys"),
    ("science", "What kind of animal is a frog?",
     "A frog is an {}.", "amphibian", "insect"),
    ("science", "What kind of animal is a whale?",
     "A whale is a {}.", "mammal", "fish"),
    # geography
    ("geography", "What is the largest ocean on Earth?",
     "The largest ocean on Earth is the {} Ocean.", "Pacific", "Atlantic"),
    ("geography", "What is the longest river in Africa?",
     "The longest river in Africa is the {}.", "Nile", "Congo"),
    ("geography", "What is the highest mountain on Earth?",
     "The highest mountain on Earth is Mount {}.", "Everest", "Kilimanjaro"),
    ("geography", "What is the largest hot desert in the world?",
     "The largest hot desert in the world is the {}.", "Sahara", "Gobi"),
    ("geography", "What is the largest country in the world by area?",
     "The largest country in the world by area is {}.", "Russia", "Canada"),
    ("geography", "On which continent is Egypt?", "Egypt is in {}.", "Africa", "Asia"),
    ("geography", "On which continent is Brazil?", "Brazil is in {}.", "South America",
     "Africa"),
    ("geography", "What is the largest continent by area?",
     "The largest continent by area is {}.", "Asia", "Africa"),
    ("geography", "What is the smallest continent by area?",
     "The smallest continent by area is {}.", "Australia", "Europe"),
    ("geography", "In which country is Mount Kilimanjaro?",
     "Mount Kilimanjaro is in {}.", "Tanzania", "Kenya"),
    ("geography", "Which river flows through London?",
     "The river that flows through London is the {}.", "Thames", "Seine"),
    ("geography", "Which river flows through Paris?",
     "The river that flows through Paris is the {}.", "Seine", "Thames"),
    ("geography", "Off the coast of which country is the Great Barrier Reef?",
     "The Great Barrier Reef is off the coast of {}.", "Australia", "Brazil"),
    ("geography", "Which ocean lies between Europe and North America?",
     "The ocean between Europe and North America is the {} Ocean.", "Atlantic", "Pacific"),
    ("geography", "What is the largest island in the world?",
     "The largest island in the world is {}.", "Greenland", "Iceland"),
    ("geography", "In which city is the Statue of Liberty?",
     "The Statue of Liberty is in {}.", "New York City", "Chicago"),
    ("geography", "In which city is the Eiffel Tower?", "The Eiffel Tower is in {}.", "Paris",
     "Rome"),
    ("geography", "In which city is the Colosseum?", "The Colosseum is in {}.", "Rome",
     "Athens"),
    ("geography", "In which country is the Taj Mahal?", "The Taj Mahal is in {}.", "India",
     "Egypt"),
    ("geography", "In which country are the Pyramids of Giza?",
     "The Pyramids of Giza are in {}.", "Egypt", "Mexico"),
    ("geography", "In which country is Machu Picchu?", "Machu Picchu is in {}.", "Peru",
     "Chile"),
    ("geography", "In which country is the Great Wall?", "The Great Wall is in {}.", "China",
     "Japan"),
    ("geography", "In which country is Mount Fuji?", "Mount Fuji is in {}.", "Japan", "China"),
    ("geography", "Which two oceans does the Panama Canal connect?",
     "The Panama Canal connects the {} oceans.", "Atlantic and Pacific",
     "Indian and Arctic"),
    ("geography", "In which country is the Amazon rainforest mostly found?",
     "The Amazon rainforest is mostly found in {}.", "Brazil", "Argentina"),
    ("geography", "What is the longest river in South America?",
     "The longest river in South America is the {}.", "Amazon", "Orinoco"),
    # history and culture
    ("history", "In which year did World War II end?", "World War II ended in {}.", "1945",
     "1950"),
    ("history", "In which year did World War I begin?", "World War I began in {}.", "1914",
     "1918"),
    ("history", "In which year did Christopher Columbus first reach the Americas?",
     "Christopher Columbus first reached the Americas in {}.", "1492", "1592"),
    ("history", "In which year was the United States Declaration of Independence signed?",
     "The United States Declaration of Independence was signed in {}.", "1776", "1786"),
    ("history", "In which year did humans first land on the Moon?",
     "Humans first landed on the Moon in {}.", "1969", "1959"),
    ("history", "In which year did the Berlin Wall fall?", "The Berlin Wall fell in {}.",
     "1989", "1979"),
    ("history", "In which year did the French Revolution begin?",
     "The French Revolution began in {}.", "1789", "1689"),
    ("history", "In which year did the Titanic sink?", "The Titanic sank in {}.", "1912",
     "1922"),
    ("history", "In which year was the Battle of Hastings?",
     "The Battle of Hastings was in {}.", "1066", "1166"),
    ("history", "In which year did the Soviet Union dissolve?",
     "The Soviet Union dissolved in {}.", "1991", "1981"),
    ("history", "Who was the first person to walk on the Moon?",
     "The first person to walk on the Moon was {}.", "Neil Armstrong", "Yuri Gagarin"),
    ("history", "Who was the first President of the United States?",
     "The first President of the United States was {}.", "George Washington",
     "Abraham Lincoln"),
    ("history", "Who was the first person to travel into space?",
     "The first person to travel into space was {}.", "Yuri Gagarin", "Neil Armstrong"),
    ("culture", "Who painted the Mona Lisa?", "The Mona Lisa was painted by {}.",
     "Leonardo da Vinci", "Michelangelo"),
    ("culture", "Who wrote Romeo and Juliet?", "Romeo and Juliet was written by {}.",
     "William Shakespeare", "Charles Dickens"),
    ("culture", "Who wrote Hamlet?", "Hamlet was written by {}.", "William Shakespeare",
     "Jane Austen"),
    ("culture", "Who painted The Starry Night?", "The Starry Night was painted by {}.",
     "Vincent van Gogh", "Claude Monet"),
    ("culture", "Who composed the Moonlight Sonata?",
     "The Moonlight Sonata was composed by {}.", "Ludwig van Beethoven", "Johann Strauss"),
    ("culture", "Who wrote Pride and Prejudice?", "Pride and Prejudice was written by {}.",
     "Jane Austen", "Emily Dickinson"),
    ("science", "Who developed the theory of relativity?",
     "The theory of relativity was developed by {}.", "Albert Einstein", "Isaac Newton"),
    ("science", "Who discovered penicillin?", "Penicillin was discovered by {}.",
     "Alexander Fleming", "Louis Pasteur"),
    ("science", "Who proposed the theory of evolution by natural selection?",
     "The theory of evolution by natural selection was proposed by {}.", "Charles Darwin",
     "Gregor Mendel"),
    # language and everyday knowledge
    ("language", "How many letters are in the English alphabet?",
     "The English alphabet has {} letters.", "26", "24"),
    ("language", "What is the plural of mouse?", "The plural of mouse is {}.", "mice",
     "mouses"),
    ("language", "What is the plural of child?", "The plural of child is {}.", "children",
     "childs"),
    ("language", "What is the past tense of go?", "The past tense of go is {}.", "went",
     "goed"),
    ("language", "What is the opposite of ancient?", "The opposite of ancient is {}.",
     "modern", "old"),
    ("language", "Which language is mainly spoken in Brazil?",
     "The language mainly spoken in Brazil is {}.", "Portuguese", "Spanish"),
    ("language", "Which language is mainly spoken in Mexico?",
     "The language mainly spoken in Mexico is {}.", "Spanish", "Portuguese"),
    ("everyday", "What is the currency of Japan?", "The currency of Japan is the {}.", "yen",
     "won"),
    ("everyday", "What is the currency of the United Kingdom?",
     "The currency of the United Kingdom is the {}.", "pound sterling", "euro"),
    ("everyday", "What is the currency of the United States?",
     "The currency of the United States is the {}.", "dollar", "peso"),
    ("everyday", "How many players does a football (soccer) team have on the field?",
     "A football team has {} players on the field.", "11", "9"),
    ("everyday", "How many strings does a standard guitar have?",
     "A standard guitar has {} strings.", "6", "5"),
    ("everyday", "What colour do you get by mixing blue and yellow paint?",
     "Mixing blue and yellow paint gives {}.", "green", "purple"),
    ("everyday", "What colour do you get by mixing red and white paint?",
     "Mixing red and white paint gives {}.", "pink", "orange"),
    ("everyday", "How many sides does a triangle have?", "A triangle has {} sides.", "3", "4"),
    ("everyday", "How many sides does a hexagon have?", "A hexagon has {} sides.", "6", "8"),
    ("everyday", "How many sides does an octagon have?", "An octagon has {} sides.", "8", "6"),
    ("everyday", "How many sides does a pentagon have?", "A pentagon has {} sides.", "5", "7"),
    ("everyday", "How many days are in the month of February in a leap year?",
     "In a leap year, February has {} days.", "29", "30"),
    ("everyday", "Which month comes after June?", "The month after June is {}.", "July",
     "August"),
    ("everyday", "Which day comes after Friday?", "The day after Friday is {}.", "Saturday",
     "Thursday"),
    ("everyday", "How many hours are on a standard clock face?",
     "A standard clock face shows {} hours.", "12", "10"),
]


def _build() -> list[Fact]:
    facts: list[Fact] = []
    for country, capital, wrong in CAPITALS:
        facts.append(Fact(
            "capitals", f"What is the capital of {country}?",
            f"The capital of {country} is {{}}.", capital, wrong,
            why=f"{capital} is where the national government of {country} sits."))
    for element, sym, wrong in SYMBOLS:
        facts.append(Fact(
            "chemistry", f"What is the chemical symbol for {element}?",
            f"The chemical symbol for {element} is {{}}.", sym, wrong,
            why=f"{sym} is the symbol listed for {element} in the periodic table."))
    for small, big, n, wrong in UNITS:
        facts.append(Fact(
            "units", f"How many {small} are in {big}?", f"There are {{}} {small} in {big}.",
            n, wrong, why=f"By definition, {big} is {n} {small}."))
    for topic, q, template, answer, wrong in OTHER:
        facts.append(Fact(topic, q, template, answer, wrong))
    return facts


FACTS: list[Fact] = _build()
