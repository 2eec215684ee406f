"""The shop's catalogue: products with a type, attributes, options and a price, from a seeded generator.

A product belongs to one of the categories below and has one product type of it (``shirt``,
``electric kettle``). Its attributes are one value of each of the category's facets (a material, a
fit) plus a few of its features (``machine washable``); its options are, for each option group of
its type (``size``, ``color``), the values a buyer can choose between on the item page. The title
names the brand, the type and some attributes; the item page lists them all.

``generate_products(n, seed)`` is deterministic; the shipped catalogue
(``budgetgym/assets/web/products.jsonl``) is ``generate_products(CATALOGUE_SIZE, CATALOGUE_SEED)``,
and the benchmark builds larger ones (20,000 and 200,000 products) the same way.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Iterable, Mapping

from budgetgym.core.tasks import ASSETS, read_jsonl

CATALOGUE_SIZE = 2_000
CATALOGUE_SEED = 1_1_2026
PRODUCTS_PATH = ASSETS / "web" / "products.jsonl"

_COLORS = ("black", "white", "navy", "grey", "red", "green", "olive", "beige", "burgundy", "sky blue",
           "charcoal", "pink")
_APPAREL_SIZES = ("xs", "s", "m", "l", "xl", "xxl")
_SHOE_SIZES = ("6", "7", "8", "9", "10", "11", "12")
_PACKS = ("1 pack", "2 pack", "3 pack", "4 pack", "6 pack", "12 pack")

# category -> facets (one value each), features (a few each), option groups (per type), price range, brands
CATEGORIES: Mapping[str, Mapping[str, Any]] = MappingProxyType({
    "clothing": {
        "types": {"shirt": ("size", "color"), "t-shirt": ("size", "color"), "hoodie": ("size", "color"),
                  "jacket": ("size", "color")},
        "facets": {"material": ("cotton", "organic cotton", "linen", "polyester", "wool blend"),
                   "fit": ("slim fit", "regular fit", "relaxed fit")},
        "features": ("machine washable", "wrinkle free", "moisture wicking", "long sleeve", "short sleeve",
                     "water resistant", "breathable", "pockets"),
        "options": {"size": _APPAREL_SIZES, "color": _COLORS},
        "price": (9, 89), "brands": ("Norvik", "Tessaro", "Bluefin", "Haldane", "Copperleaf"),
    },
    "footwear": {
        "types": {"running shoes": ("size", "color"), "boots": ("size", "color"), "sandals": ("size", "color"),
                  "sneakers": ("size", "color")},
        "facets": {"material": ("leather", "suede", "mesh", "canvas", "synthetic")},
        "features": ("waterproof", "non slip", "memory foam", "lightweight", "wide fit", "arch support",
                     "slip on", "vegan"),
        "options": {"size": _SHOE_SIZES, "color": _COLORS},
        "price": (19, 159), "brands": ("Stridewell", "Orca Trail", "Pemberly", "Kestrel", "Lumo"),
    },
    "kitchen": {
        "types": {"frying pan": ("size",), "chef knife": ("size", "color"), "electric kettle": ("capacity", "color"),
                  "saucepan": ("size",)},
        "facets": {"material": ("stainless steel", "cast iron", "ceramic", "carbon steel", "aluminum")},
        "features": ("nonstick", "dishwasher safe", "induction compatible", "oven safe", "bpa free",
                     "ergonomic handle", "auto shut off", "lid included"),
        "options": {"size": ("6 inch", "8 inch", "10 inch", "12 inch", "14 inch"),
                    "capacity": ("0.8 liter", "1 liter", "1.5 liter", "1.7 liter", "2 liter"),
                    "color": ("black", "silver", "red", "white", "copper", "matte green")},
        "price": (12, 129), "brands": ("Castella", "Hearthmark", "Brightwok", "Zelin", "Oakhaven"),
    },
    "electronics": {
        "types": {"headphones": ("color",), "bluetooth speaker": ("color",), "phone charger": ("length", "color"),
                  "power bank": ("capacity", "color")},
        "facets": {"connection": ("wireless", "wired", "usb c", "lightning")},
        "features": ("noise cancelling", "waterproof", "fast charging", "long battery life", "foldable",
                     "built in microphone", "compact", "led indicator"),
        "options": {"color": ("black", "white", "silver", "blue", "rose gold", "graphite"),
                    "length": ("3 ft", "6 ft", "10 ft"),
                    "capacity": ("5000 mah", "10000 mah", "20000 mah", "26800 mah")},
        "price": (9, 249), "brands": ("Voltaris", "Sonique", "Ampere", "Clearwave", "Nimbus"),
    },
    "furniture": {
        "types": {"office chair": ("color",), "desk": ("size", "color"), "bookshelf": ("size", "color"),
                  "floor lamp": ("color",)},
        "facets": {"material": ("solid wood", "metal", "bamboo", "engineered wood", "rattan")},
        "features": ("adjustable height", "easy assembly", "ergonomic", "foldable", "with storage",
                     "lumbar support", "scratch resistant", "mid century"),
        "options": {"color": ("walnut", "oak", "white", "black", "grey", "espresso"),
                    "size": ("small", "medium", "large", "extra large")},
        "price": (39, 399), "brands": ("Arbor & Co", "Linnea", "Fjordic", "Mosswood", "Studio Nine"),
    },
    "beauty": {
        "types": {"shampoo": ("size", "scent"), "moisturizer": ("size", "scent"), "sunscreen": ("size",),
                  "lip balm": ("scent", "pack")},
        "facets": {"skin type": ("for dry skin", "for oily skin", "for sensitive skin", "for all skin types")},
        "features": ("fragrance free", "paraben free", "vegan", "cruelty free", "organic", "hypoallergenic",
                     "sulfate free", "dermatologist tested"),
        "options": {"size": ("2 oz", "4 oz", "8 oz", "12 oz", "16 oz"),
                    "scent": ("unscented", "lavender", "coconut", "citrus", "vanilla", "mint"),
                    "pack": _PACKS[:4]},
        "price": (4, 49), "brands": ("Petalis", "Dewcrest", "Aurelle", "Verdana", "Calmora"),
    },
    "sports": {
        "types": {"yoga mat": ("color", "thickness"), "dumbbells": ("weight",), "water bottle": ("capacity", "color"),
                  "resistance bands": ("pack", "color")},
        "facets": {"material": ("tpe", "natural rubber", "stainless steel", "neoprene", "latex free")},
        "features": ("non slip", "eco friendly", "bpa free", "insulated", "adjustable", "leak proof",
                     "carrying strap", "sweat resistant"),
        "options": {"color": _COLORS[:8], "thickness": ("4 mm", "6 mm", "8 mm", "10 mm"),
                    "weight": ("5 lb", "10 lb", "15 lb", "20 lb", "25 lb"),
                    "capacity": ("12 oz", "18 oz", "24 oz", "32 oz", "40 oz"), "pack": _PACKS[:4]},
        "price": (8, 119), "brands": ("Peakform", "Zenpath", "Ironvale", "Aquaro", "Flexa"),
    },
    "grocery": {
        "types": {"coffee beans": ("flavor", "pack"), "green tea": ("flavor", "pack"), "granola": ("flavor", "pack"),
                  "dark chocolate": ("flavor", "pack")},
        "facets": {"diet": ("organic", "conventional", "keto", "low sugar")},
        "features": ("fair trade", "gluten free", "non gmo", "kosher", "vegan", "single origin", "no additives",
                     "resealable bag"),
        "options": {"flavor": ("original", "vanilla", "hazelnut", "mint", "caramel", "honey", "sea salt"),
                    "pack": _PACKS},
        "price": (4, 59), "brands": ("Harvest Lane", "Morrow Farms", "Tamarind", "Goldleaf", "Brookside"),
    },
    "pet supplies": {
        "types": {"dog bed": ("size", "color"), "cat toy": ("pack", "color"), "dog leash": ("length", "color"),
                  "pet bowl": ("size", "color")},
        "facets": {"pet": ("for dogs", "for cats", "for puppies", "for small pets")},
        "features": ("washable", "chew resistant", "non slip", "reflective", "orthopedic", "waterproof",
                     "catnip filled", "durable"),
        "options": {"size": ("small", "medium", "large", "x large"), "color": _COLORS[:8], "pack": _PACKS[:4],
                    "length": ("4 ft", "6 ft", "8 ft")},
        "price": (5, 99), "brands": ("Pawley", "Whiskerwood", "Barkside", "Tailwind", "Furbrook"),
    },
    "office": {
        "types": {"notebook": ("pack", "color"), "gel pens": ("pack", "color"), "desk organizer": ("color",),
                  "backpack": ("color", "size")},
        "facets": {"paper": ("recycled", "premium", "standard", "acid free")},
        "features": ("refillable", "water resistant", "laptop sleeve", "lay flat", "quick dry ink",
                     "hardcover", "padded straps", "dotted pages"),
        "options": {"pack": _PACKS, "color": _COLORS,
                    "size": ("small", "medium", "large")},
        "price": (3, 89), "brands": ("Inkwell", "Quillstone", "Paperhaus", "Ledgerly", "Marlow"),
    },
    "home": {
        "types": {"bath towel": ("color", "pack"), "bed sheets": ("size", "color"), "throw pillow": ("color", "size"),
                  "curtains": ("length", "color")},
        "facets": {"material": ("cotton", "linen", "microfiber", "bamboo", "velvet")},
        "features": ("machine washable", "blackout", "hypoallergenic", "quick dry", "wrinkle resistant",
                     "deep pocket", "thermal insulated", "fade resistant"),
        "options": {"color": _COLORS, "pack": _PACKS[:4], "size": ("twin", "full", "queen", "king"),
                    "length": ("63 inch", "84 inch", "96 inch", "108 inch")},
        "price": (9, 149), "brands": ("Hearth & Loom", "Softhaven", "Mirelle", "Cottonway", "Drift"),
    },
    "garden": {
        "types": {"garden hose": ("length", "color"), "planter": ("size", "color"), "pruning shears": ("color",),
                  "bird feeder": ("size", "color")},
        "facets": {"material": ("rubber", "ceramic", "steel", "plastic", "cedar wood")},
        "features": ("rust resistant", "uv resistant", "expandable", "drainage holes", "ergonomic handle",
                     "weatherproof", "squirrel proof", "lightweight"),
        "options": {"length": ("25 ft", "50 ft", "75 ft", "100 ft"), "color": _COLORS[:8],
                    "size": ("small", "medium", "large")},
        "price": (8, 119), "brands": ("Greenfold", "Thornbury", "Meadowlark", "Sproutly", "Elmridge"),
    },
    "toys": {
        "types": {"building blocks": ("pieces",), "jigsaw puzzle": ("pieces",), "plush toy": ("size", "color"),
                  "board game": ("edition",)},
        "facets": {"age": ("for toddlers", "for kids", "for teens", "for adults")},
        "features": ("educational", "non toxic", "battery free", "travel size", "glow in the dark",
                     "stem", "gift box", "machine washable"),
        "options": {"pieces": ("100 pieces", "300 pieces", "500 pieces", "1000 pieces"),
                    "size": ("small", "medium", "large"), "color": _COLORS[:8],
                    "edition": ("classic edition", "travel edition", "deluxe edition")},
        "price": (6, 79), "brands": ("Kiddo Works", "Brightbox", "Tumbleweed", "Puzzlefox", "Maple Play"),
    },
})

_STYLE_WORDS = ("classic", "premium", "everyday", "essential", "pro", "signature", "original", "modern")


@dataclass(frozen=True, slots=True)
class Product:
    """One product of the catalogue. ``options`` maps each option group to its choosable values."""

    id: str
    title: str
    category: str
    type: str
    brand: str
    attributes: tuple[str, ...]
    options: Mapping[str, tuple[str, ...]]
    price: float
    rating: float

    @property
    def description(self) -> str:
        return f"{self.brand} {self.type}: " + ", ".join(self.attributes) + "."

    def search_text(self) -> str:
        """What the search index reads: title, type, category, attributes and option values."""
        values = " ".join(v for group in self.options.values() for v in group)
        return f"{self.title} {self.type} {self.category} {' '.join(self.attributes)} {values}"

    def to_record(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "category": self.category, "type": self.type,
                "brand": self.brand, "attributes": list(self.attributes),
                "options": {k: list(v) for k, v in self.options.items()}, "price": self.price, "rating": self.rating}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> "Product":
        return cls(str(record["id"]), str(record["title"]), str(record["category"]), str(record["type"]),
                   str(record["brand"]), tuple(record["attributes"]),
                   MappingProxyType({k: tuple(v) for k, v in record["options"].items()}),
                   float(record["price"]), float(record["rating"]))


def product_id(number: int, width: int) -> str:
    return f"P{number:0{width}d}"


def generate_products(n: int, seed: int = CATALOGUE_SEED) -> list[Product]:
    """``n`` products, types spread evenly over the categories, from ``random.Random(seed)``."""
    rng = random.Random(seed)
    kinds = [(category, kind) for category, spec in CATEGORIES.items() for kind in spec["types"]]
    width = max(5, len(str(n)))
    products = []
    for number in range(n):
        category, kind = kinds[number % len(kinds)] if number < len(kinds) else rng.choice(kinds)
        products.append(_make_product(rng, product_id(number + 1, width), category, kind))
    return products


def _make_product(rng: random.Random, pid: str, category: str, kind: str) -> Product:
    spec = CATEGORIES[category]
    facet_values = [rng.choice(values) for values in spec["facets"].values()]
    features = rng.sample(spec["features"], rng.randint(2, 4))
    attributes = tuple(facet_values + features)
    options = {}
    for group in spec["types"][kind]:
        pool = spec["options"][group]
        chosen = set(rng.sample(pool, rng.randint(2, min(5, len(pool)))))
        options[group] = tuple(v for v in pool if v in chosen)  # the pool's order (sizes ascending)
    low, high = spec["price"]
    price = round(rng.uniform(low, high)) - 0.01 if high > 20 else round(rng.uniform(low, high), 1) - 0.01
    price = max(price, 1.99)
    brand = rng.choice(spec["brands"])
    shown = rng.sample(attributes, rng.randint(1, 2))  # the title names one or two attributes
    style = rng.choice(_STYLE_WORDS) if rng.random() < 0.5 else ""
    words = [brand, style, *shown, kind]
    title = " ".join(w for w in words if w).title().replace("Usb C", "USB-C")
    return Product(pid, title, category, kind, brand, attributes, MappingProxyType(options),
                   round(price, 2), round(rng.uniform(3.0, 5.0), 1))


class Catalogue:
    """The products, by id, with the search index built over them (see :mod:`.search`)."""

    def __init__(self, products: Iterable[Product]) -> None:
        self.products: tuple[Product, ...] = tuple(products)
        self.by_id: Mapping[str, Product] = {p.id: p for p in self.products}
        if len(self.by_id) != len(self.products):
            raise ValueError("product ids must be unique")
        self.by_type: dict[str, list[Product]] = {}
        for product in self.products:
            self.by_type.setdefault(product.type, []).append(product)

    def __len__(self) -> int:
        return len(self.products)

    def __getitem__(self, pid: str) -> Product:
        return self.by_id[pid]

    def __contains__(self, pid: object) -> bool:
        return pid in self.by_id

    @functools.cached_property
    def fingerprint(self) -> str:
        """A short hash of every product: a snapshot names it, so one of another catalogue is refused."""
        digest = hashlib.sha256()
        for product in self.products:
            digest.update(json.dumps(product.to_record(), sort_keys=True).encode())
        return digest.hexdigest()[:16]

    @functools.cached_property
    def index(self):
        from budgetgym.envs.web.search import SearchIndex

        return SearchIndex(self.products)


@functools.lru_cache(maxsize=None)
def load_catalogue(path: Path = PRODUCTS_PATH) -> Catalogue:
    """The shipped catalogue (read and indexed once per process)."""
    if not path.exists():
        raise FileNotFoundError(f"no web shop catalogue at {path}; run `python -m budgetgym.envs.web.assets`")
    return Catalogue(Product.from_record(r) for r in read_jsonl(path))
