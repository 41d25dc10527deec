"""Our PlantUML class-diagram parser, pinned field by field on realistic diagrams."""

from __future__ import annotations

import networkx as nx
import pytest

from sysmo.tools.plantuml.class_model import Attribute, ClassKind, Method, Parameter, RelationType, Visibility
from sysmo.tools.plantuml.parse_class import parse_class_diagram, parse_member

LIBRARY = """@startuml
title Library lending
skinparam classAttributeIconSize 0
' members in the `name : Type` style
package library {
  abstract class Item <<Entity>> {
    - id : int
    # title: String = "untitled"
    + {static} count : int
    + {abstract} describe() : String
    + checkout(member: Member, days: int = 14): Loan
  }
  class Book extends Item implements Lendable {
    isbn : String
  }
  interface Lendable
  enum Status {
    AVAILABLE
    LOANED, LOST
  }
}
class "Loan Record" as Loan {
  due : Date
}
note "loans expire" as N1
N1 .. Loan
Item "1" *-- "0..*" Loan : has >
Member o-left- "many" Loan
Loan ..> Status
Magazine -up-|> Item
Loan ..|> Lendable
Member -- Library
Library <-- Member : uses
Book -[hidden]- Member
Member : +name : String
Member : +borrow(item: Item) : Loan
@enduml
"""

SHOP_JAVA_STYLE = """@startuml
interface Repository<T, ID> {
  + T findById(ID id)
  + List<T> findAll()
  + void save(T entity)
}
class OrderService {
  - Repository<Order, Long> orders
  - {static} final int MAX_ITEMS = 50
  + Order place(Customer customer, List<Item> items)
  + void cancel(long orderId) throws NotFound
  ~ boolean validate(Order)
}
class Order {
  - long id
  - BigDecimal total
  + BigDecimal getTotal()
}
OrderRepository ..|> Repository
OrderService --> "1" OrderRepository : orders
Order "1" o-- "1..*" LineItem
Customer "1" -- "*" Order : places >
LineItem --> Product
Order --* Shop
@enduml
"""


@pytest.fixture(scope="module")
def library():
    return parse_class_diagram(LIBRARY)


@pytest.fixture(scope="module")
def shop():
    return parse_class_diagram(SHOP_JAVA_STYLE)


def test_library_classes_kinds_packages_and_implicit_ones(library):
    assert library.names() == [
        "Item",
        "Book",
        "Lendable",
        "Status",
        "Loan Record",
        "Member",
        "Magazine",
        "Library",
    ]
    item, book, lendable, status = (library.get(n) for n in ("Item", "Book", "Lendable", "Status"))
    assert (item.kind, item.stereotypes, item.package, item.line) == (
        ClassKind.ABSTRACT_CLASS,
        ["Entity"],
        "library",
        6,
    )
    assert (book.kind, lendable.kind, status.kind) == (ClassKind.CLASS, ClassKind.INTERFACE, ClassKind.ENUM)
    assert status.enum_values == ["AVAILABLE", "LOANED", "LOST"]
    loan = library.get("Loan")  # found by alias
    assert (loan.name, loan.alias, loan.package, loan.implicit) == ("Loan Record", "Loan", None, False)
    assert [c.name for c in library.classes if c.implicit] == ["Magazine", "Library"]
    assert library.get("Member").implicit is False  # declared by `Member : +name : String`
    assert library.get("N1") is None  # a note, not a class
    assert library.packages == ["library"]


def test_library_members_in_name_colon_type_style(library):
    item = library.get("Item")
    assert item.attributes == [
        Attribute(name="id", type="int", visibility=Visibility.PRIVATE, line=7),
        Attribute(name="title", type="String", visibility=Visibility.PROTECTED, default='"untitled"', line=8),
        Attribute(name="count", type="int", visibility=Visibility.PUBLIC, static=True, line=9),
    ]
    assert item.methods == [
        Method(name="describe", return_type="String", visibility=Visibility.PUBLIC, abstract=True, line=10),
        Method(
            name="checkout",
            return_type="Loan",
            visibility=Visibility.PUBLIC,
            line=11,
            parameters=[Parameter(name="member", type="Member"), Parameter(name="days", type="int")],
        ),
    ]
    member = library.get("Member")
    assert [a.name for a in member.attributes] == ["name"]
    assert member.methods[0].parameters == [Parameter(name="item", type="Item")]


def test_library_relationships_are_normalised(library):
    rels = [
        (r.type, r.source, r.target, r.source_multiplicity, r.target_multiplicity, r.label, r.directed)
        for r in library.relationships
    ]
    assert rels == [
        (RelationType.GENERALIZATION, "Book", "Item", None, None, None, True),  # extends
        (RelationType.REALIZATION, "Book", "Lendable", None, None, None, True),  # implements
        (RelationType.COMPOSITION, "Item", "Loan Record", "1", "0..*", "has", True),
        (RelationType.AGGREGATION, "Member", "Loan Record", None, "many", None, True),
        (RelationType.DEPENDENCY, "Loan Record", "Status", None, None, None, True),
        (RelationType.GENERALIZATION, "Magazine", "Item", None, None, None, True),
        (RelationType.REALIZATION, "Loan Record", "Lendable", None, None, None, True),
        (RelationType.ASSOCIATION, "Member", "Library", None, None, None, False),
        (RelationType.ASSOCIATION, "Member", "Library", None, None, "uses", True),  # `Library <-- Member`
    ]
    assert [r.arrow for r in library.relationships][2:] == [
        "*--",
        "o-left-",
        "..>",
        "-up-|>",
        "..|>",
        "--",
        "<--",
    ]
    assert [r.line for r in library.relationships] == [13, 13, 27, 28, 29, 30, 31, 32, 33]


def test_java_style_members_generics_and_static(shop):
    repo = shop.get("Repository")
    assert (repo.kind, repo.generics) == (ClassKind.INTERFACE, ["T", "ID"])
    assert [(m.name, m.return_type, m.parameters) for m in repo.methods] == [
        ("findById", "T", [Parameter(name="id", type="ID")]),
        ("findAll", "List<T>", []),
        ("save", "void", [Parameter(name="entity", type="T")]),
    ]
    service = shop.get("OrderService")
    assert service.attributes == [
        Attribute(name="orders", type="Repository<Order, Long>", visibility=Visibility.PRIVATE, line=8),
        Attribute(
            name="MAX_ITEMS", type="int", visibility=Visibility.PRIVATE, static=True, default="50", line=9
        ),
    ]
    place, cancel, validate = service.methods
    assert (place.name, place.return_type, place.parameters) == (
        "place",
        "Order",
        [Parameter(name="customer", type="Customer"), Parameter(name="items", type="List<Item>")],
    )
    assert (cancel.return_type, cancel.parameters) == ("void", [Parameter(name="orderId", type="long")])
    assert (validate.visibility, validate.return_type, validate.parameters) == (
        Visibility.PACKAGE,
        "boolean",
        [Parameter(name=None, type="Order")],
    )
    assert [(a.name, a.type) for a in shop.get("Order").attributes] == [
        ("id", "long"),
        ("total", "BigDecimal"),
    ]


def test_java_style_relationships_and_multiplicities(shop):
    rels = [
        (r.type.value, r.source, r.target, r.source_multiplicity, r.target_multiplicity, r.label)
        for r in shop.relationships
    ]
    assert rels == [
        ("realization", "OrderRepository", "Repository", None, None, None),
        ("association", "OrderService", "OrderRepository", None, "1", "orders"),
        ("aggregation", "Order", "LineItem", "1", "1..*", None),
        ("association", "Customer", "Order", "1", "*", "places"),
        ("association", "LineItem", "Product", None, None, None),
        ("composition", "Shop", "Order", None, None, None),  # `Order --* Shop`: Shop is the whole
    ]
    assert {c.name for c in shop.classes if c.implicit} == {
        "OrderRepository",
        "LineItem",
        "Customer",
        "Product",
        "Shop",
    }


@pytest.mark.parametrize(
    ("arrow", "expected"),
    [
        ("<|--", ("generalization", "B", "A")),
        ("--|>", ("generalization", "A", "B")),
        ("<|..", ("realization", "B", "A")),
        ("..|>", ("realization", "A", "B")),
        ("*--", ("composition", "A", "B")),
        ("--*", ("composition", "B", "A")),
        ("o--", ("aggregation", "A", "B")),
        ("--o", ("aggregation", "B", "A")),
        ("..>", ("dependency", "A", "B")),
        ("<..", ("dependency", "B", "A")),
        ("-->", ("association", "A", "B")),
        ("<--", ("association", "B", "A")),
        ("--", ("association", "A", "B")),
        ("->", ("association", "A", "B")),
        ("---->", ("association", "A", "B")),
        ("-right->", ("association", "A", "B")),
        ("-l->", ("association", "A", "B")),
        ("-[#red]->", ("association", "A", "B")),
        ("<|-down-", ("generalization", "B", "A")),
        (".left.>", ("dependency", "A", "B")),
        ("*-->", ("composition", "A", "B")),
        ("...", ("dependency", "A", "B")),
    ],
)
def test_every_arrow_form_gives_type_and_direction(arrow, expected):
    model = parse_class_diagram(f"@startuml\nA {arrow} B\n@enduml")
    rel = model.relationships[0]
    assert (rel.type.value, rel.source, rel.target) == expected


def test_unclosed_body_still_yields_both_classes():
    model = parse_class_diagram("@startuml\nclass Order {\n  +id : int\nclass Customer\n@enduml")
    assert model.names() == ["Order", "Customer"]
    assert [a.name for a in model.get("Order").attributes] == ["id"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("name : String", Attribute(name="name", type="String")),
        ("String name", Attribute(name="name", type="String")),
        ("-items : List<Item>", Attribute(name="items", type="List<Item>", visibility=Visibility.PRIVATE)),
        ("Map<String, Integer> counts", Attribute(name="counts", type="Map<String, Integer>")),
        (
            "+{static} int total = 0",
            Attribute(name="total", type="int", visibility=Visibility.PUBLIC, static=True, default="0"),
        ),
        ("String[] names", Attribute(name="names", type="String[]")),
        ("flag", Attribute(name="flag")),
        (
            "+run(a: int, b: String): void",
            Method(
                name="run",
                return_type="void",
                visibility=Visibility.PUBLIC,
                parameters=[Parameter(name="a", type="int"), Parameter(name="b", type="String")],
            ),
        ),
        (
            "void run(int a, String b)",
            Method(
                name="run",
                return_type="void",
                parameters=[Parameter(name="a", type="int"), Parameter(name="b", type="String")],
            ),
        ),
        (
            "public static void main(String[] args)",
            Method(
                name="main",
                return_type="void",
                visibility=Visibility.PUBLIC,
                static=True,
                parameters=[Parameter(name="args", type="String[]")],
            ),
        ),
        ("getId()", Method(name="getId")),
        ("{method} size", Attribute(name="size")),  # {method} without parentheses stays text PlantUML shows
    ],
)
def test_member_styles(text, expected):
    assert parse_member(text) == expected


def test_to_networkx_has_classes_and_typed_edges(library):
    graph = library.to_networkx()
    assert isinstance(graph, nx.MultiDiGraph)
    assert set(graph.nodes) == set(library.names())
    assert graph.number_of_edges() == len(library.relationships)
    assert {d["type"] for _, _, d in graph.edges("Book", data=True)} == {
        RelationType.GENERALIZATION,
        RelationType.REALIZATION,
    }
