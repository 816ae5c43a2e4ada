"""The demo corpus: a help centre for a fictional home battery, the Aurora H5, and its questions.

Written for ragtrace; every fact here is invented and consistent with the others, so answers
can be checked against it. ``ARTICLES`` holds the documents (id, title, section, text);
``QUESTIONS`` the stream of user questions, a few of which the help centre cannot answer.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Article:
    """One help-centre article.

    Attributes:
        id: Stable document id (``section-NN``).
        title: The article's title.
        text: Its body, a few sentences.
        updated: When it was last edited (ISO date).
    """

    id: str
    title: str
    text: str
    updated: str = "2025-03-01"

    @property
    def section(self) -> str:
        """The help-centre section, from the id (``install``, ``warranty``, ...)."""
        return self.id.rsplit("-", 1)[0]


ARTICLES: tuple[Article, ...] = (
    Article(
        "install-01",
        "Capacity and power",
        "The Aurora H5 home battery stores 13.5 kWh and "
        "delivers 5 kW continuous power. It weighs 114 kg and must be mounted on a wall or "
        "floor stand by a certified installer. The battery is made for buildings: do not mount "
        "it on a boat, in a caravan or in a vehicle.",
    ),
    Article(
        "install-02",
        "How installation works",
        "Installation takes about four hours. The "
        "installer connects the H5 to the main panel through the Aurora Gateway, which "
        "switches the home to battery power in an outage.",
    ),
    Article(
        "install-03",
        "Indoor and outdoor installation",
        "The H5 can be installed indoors or "
        "outdoors. Outdoor units need 30 cm of clearance on each side and must not be placed "
        "in direct afternoon sun.",
    ),
    Article(
        "install-04",
        "Stacking several units",
        "Up to four H5 units can be stacked on one "
        "Gateway, giving 54 kWh of storage. Mixed generations are not supported: all units "
        "on a Gateway must run firmware 4.x.",
    ),
    Article(
        "install-05",
        "Permits",
        "Most municipalities need no permit to install an H5 "
        "battery. Your installer checks local rules and files any notice with the grid operator.",
        "2025-05-12",
    ),
    Article(
        "temp-01",
        "Cold weather",
        "The H5 operates between -20 C and 50 C. Below 0 C it "
        "warms its cells before charging, which can delay charging by up to 40 minutes on "
        "cold mornings.",
    ),
    Article(
        "temp-02",
        "Hot weather",
        "Above 45 C the H5 limits its output to 3 kW to protect "
        "the cells. The app shows a thermometer icon while output is limited.",
    ),
    Article(
        "app-01",
        "The Aurora app",
        "The Aurora app shows charge level, solar production and "
        "home consumption in real time. History is kept for 24 months and can be exported "
        "as CSV from Settings > Data.",
    ),
    Article(
        "app-02",
        "Storm Watch",
        "Storm Watch is an app feature that charges the battery to "
        "100% when the weather service issues a storm warning for the home's postcode. It is "
        "on by default.",
    ),
    Article(
        "app-03",
        "Time-based control",
        "Time-based control lets the H5 charge when "
        "electricity is cheap and discharge during peak hours. Tariffs are entered in "
        "Settings > Energy > Rates.",
    ),
    Article(
        "app-04",
        "Backup reserve",
        "Backup reserve is the share of capacity kept for "
        "outages. The default is 20% and it can be set between 0% and 100% in the app.",
    ),
    Article(
        "app-05",
        "Offline mode",
        "The battery works without internet: the H5 keeps "
        "running on its last settings. The app then connects over Bluetooth within 10 metres "
        "of the unit.",
        "2025-06-20",
    ),
    Article(
        "warranty-01",
        "Warranty terms",
        "The H5 warranty lasts 10 years and guarantees 70% "
        "of the original capacity at the end of the period. It requires the unit to stay "
        "connected to the internet.",
    ),
    Article(
        "warranty-02",
        "Warranty claims",
        "Warranty claims are opened from the app under "
        "Support > Claims. A claim needs the serial number, which is printed on the label "
        "behind the lower cover.",
    ),
    Article(
        "warranty-03",
        "What the warranty excludes",
        "Damage from floods, fire or "
        "installation by an uncertified person is not covered by the warranty.",
    ),
    Article(
        "support-01",
        "Contacting support",
        "Aurora support answers by chat every day from "
        "8:00 to 20:00 CET. Urgent safety issues can be reported by phone at any hour on the "
        "safety line.",
    ),
    Article(
        "support-02",
        "Red status light",
        "If the H5 shows a red status light, switch it off "
        "with the side switch, wait five minutes and switch it on again. If the light stays "
        "red, contact support.",
    ),
    Article(
        "support-03",
        "Blinking blue light",
        "A blinking blue light means the H5 is updating "
        "its firmware. Updates take up to 20 minutes and must not be interrupted.",
    ),
    Article(
        "support-04",
        "Firmware updates",
        "Firmware updates install automatically at night. "
        "The release notes are listed in the app under Settings > About.",
        "2025-04-02",
    ),
    Article(
        "grid-01",
        "During an outage",
        "In an outage the Gateway disconnects the home from "
        "the grid within 200 ms, so most devices keep running without a restart.",
    ),
    Article(
        "grid-02",
        "Exporting to the grid",
        "The H5 can export energy to the grid where the "
        "utility allows it. Export limits are set by the installer and cannot be changed in "
        "the app.",
    ),
    Article(
        "solar-01",
        "Solar inverters",
        "The H5 works with any solar inverter. Excess solar "
        "power charges the battery first; once it is full the surplus goes to the grid.",
    ),
    Article(
        "solar-02",
        "Solar during an outage",
        "With the Aurora Solar Kit the H5 can restart "
        "solar production during an outage, so the battery keeps charging from the panels "
        "when the grid is down.",
    ),
    Article(
        "ev-01",
        "Electric cars",
        "The H5 can power an electric car charger, but charging a "
        "car from the battery drains it quickly. The app can exclude the car charger from "
        "backup circuits.",
    ),
    Article(
        "safety-01",
        "Battery chemistry",
        "The H5 uses lithium iron phosphate cells, which do "
        "not contain cobalt and are less prone to thermal runaway than other lithium "
        "chemistries.",
    ),
    Article(
        "safety-02",
        "Opening the enclosure",
        "Never open the H5 enclosure. It contains no "
        "user-serviceable parts and opening it voids the warranty.",
    ),
    Article(
        "safety-03",
        "Flood water",
        "If the H5 is exposed to flood water, do not touch it. "
        "Switch off the main breaker and call the safety line.",
    ),
    Article(
        "billing-01",
        "Prices",
        "The H5 costs 7,900 EUR before installation. The Aurora "
        "Gateway is included; the Solar Kit costs 650 EUR extra.",
    ),
    Article(
        "billing-02",
        "Financing",
        "Financing over 5 or 10 years is available in Germany, "
        "France and Spain. The application is made online and answered within two working "
        "days.",
    ),
    Article(
        "billing-03",
        "Returns",
        "An H5 that has not been installed can be returned within "
        "30 days for a full refund. Installed units can only be returned if faulty.",
        "2025-02-14",
    ),
    Article(
        "recycling-01",
        "End of life",
        "At the end of its life the H5 is taken back free of "
        "charge. Aurora recycles over 90% of the battery's materials.",
    ),
    Article(
        "account-01",
        "Selling your home",
        "To transfer a battery to a new owner after "
        "selling a house, the old owner removes it from their account under Settings > "
        "Devices > Transfer.",
    ),
    Article(
        "account-02",
        "Household members",
        "Each account can invite up to five household "
        "members, who can view data but cannot change settings.",
    ),
    Article(
        "account-03",
        "Privacy",
        "Aurora stores usage data in the EU and never sells it. "
        "You can download or delete your data under Settings > Privacy.",
        "2025-01-30",
    ),
    Article(
        "noise-01",
        "Noise",
        "The battery makes little noise: the H5 is fan-cooled "
        "and produces under 30 dB at one metre, quieter than a refrigerator. The fan runs "
        "faster during fast charging.",
    ),
)

QUESTIONS: tuple[str, ...] = (
    "How much energy does the Aurora H5 store?",
    "How long does installation take?",
    "Can I install the battery outdoors?",
    "How many units can I stack on one Gateway?",
    "Do I need a permit to install the battery?",
    "Why is charging slow on cold mornings?",
    "What does the thermometer icon in the app mean?",
    "How long is the history kept in the app?",
    "What is Storm Watch?",
    "How do I set my electricity tariff?",
    "What is the default backup reserve?",
    "Does the battery work without internet?",
    "How long is the warranty?",
    "Where is the serial number?",
    "Is flood damage covered by the warranty?",
    "When is support available?",
    "What should I do if the status light is red?",
    "What does a blinking blue light mean?",
    "When are firmware updates installed?",
    "Will my devices restart during an outage?",
    "Can I change the export limit in the app?",
    "Does the battery work with my solar inverter?",
    "Can the solar panels charge the battery during an outage?",
    "Can the battery charge my electric car?",
    "Does the battery contain cobalt?",
    "Can I open the battery enclosure?",
    "How much does the H5 cost?",
    "Is financing available in Italy?",
    "Can I return the battery?",
    "What happens to the battery at the end of its life?",
    "How do I transfer the battery to a new owner?",
    "Who can see my household data?",
    "Where is my usage data stored?",
    "Does the battery make a lot of noise?",
    "Can I mount the battery on a boat?",
    "What will the weather be like tomorrow?",
)
