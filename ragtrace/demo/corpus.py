"""The demo corpus: short help-centre articles about a fictional home battery, the Aurora H5.

Written for ragtrace; every fact here is invented and consistent with the others, so answers
can be checked against it.
"""

from __future__ import annotations

ARTICLES: dict[str, str] = {
    "install-01": "The Aurora H5 home battery stores 13.5 kWh and delivers 5 kW continuous power. "
    "It weighs 114 kg and must be mounted on a wall or floor stand by a certified installer.",
    "install-02": "Installation takes about four hours. The installer connects the H5 to the "
    "main panel through the Aurora Gateway, which switches the home to battery power in an outage.",
    "install-03": "The H5 can be installed indoors or outdoors. Outdoor units need 30 cm of "
    "clearance on each side and must not be placed in direct afternoon sun.",
    "install-04": "Up to four H5 units can be stacked on one Gateway, giving 54 kWh of storage. "
    "Mixed generations are not supported: all units on a Gateway must run firmware 4.x.",
    "temp-01": "The H5 operates between -20 C and 50 C. Below 0 C it warms its cells before "
    "charging, which can delay charging by up to 40 minutes on cold mornings.",
    "temp-02": "Above 45 C the H5 limits its output to 3 kW to protect the cells. The app shows "
    "a thermometer icon while output is limited.",
    "app-01": "The Aurora app shows charge level, solar production and home consumption in real "
    "time. History is kept for 24 months and can be exported as CSV from Settings > Data.",
    "app-02": "Storm Watch is an app feature that charges the battery to 100% when the weather "
    "service issues a storm warning for the home's postcode. It is on by default.",
    "app-03": "Time-based control lets the H5 charge when electricity is cheap and discharge "
    "during peak hours. Tariffs are entered in Settings > Energy > Rates.",
    "app-04": "Backup reserve is the share of capacity kept for outages. The default is 20% and "
    "it can be set between 0% and 100% in the app.",
    "warranty-01": "The H5 warranty lasts 10 years and guarantees 70% of the original capacity "
    "at the end of the period. It requires the unit to stay connected to the internet.",
    "warranty-02": "Warranty claims are opened from the app under Support > Claims. A claim "
    "needs the serial number, which is printed on the label behind the lower cover.",
    "warranty-03": "Damage from floods, fire or installation by an uncertified person is not "
    "covered by the warranty.",
    "support-01": "Aurora support answers by chat every day from 8:00 to 20:00 CET. Urgent "
    "safety issues can be reported by phone at any hour on the safety line.",
    "support-02": "If the H5 shows a red status light, switch it off with the side switch, wait "
    "five minutes and switch it on again. If the light stays red, contact support.",
    "support-03": "A blinking blue light means the H5 is updating its firmware. Updates take up "
    "to 20 minutes and must not be interrupted.",
    "grid-01": "In an outage the Gateway disconnects the home from the grid within 200 ms, so "
    "most devices keep running without a restart.",
    "grid-02": "The H5 can export energy to the grid where the utility allows it. Export limits "
    "are set by the installer and cannot be changed in the app.",
    "solar-01": "The H5 works with any solar inverter. Excess solar power charges the battery "
    "first; once it is full the surplus goes to the grid.",
    "solar-02": "With the Aurora Solar Kit the H5 can restart solar production during an outage, "
    "so the battery keeps charging from the panels when the grid is down.",
    "ev-01": "The H5 can power an electric car charger, but charging a car from the battery "
    "drains it quickly. The app can exclude the car charger from backup circuits.",
    "safety-01": "The H5 uses lithium iron phosphate cells, which do not contain cobalt and are "
    "less prone to thermal runaway than other lithium chemistries.",
    "safety-02": "Never open the H5 enclosure. It contains no user-serviceable parts and opening "
    "it voids the warranty.",
    "safety-03": "If the H5 is exposed to flood water, do not touch it. Switch off the main "
    "breaker and call the safety line.",
    "billing-01": "The H5 costs 7,900 EUR before installation. The Aurora Gateway is included; "
    "the Solar Kit costs 650 EUR extra.",
    "billing-02": "Financing over 5 or 10 years is available in Germany, France and Spain. The "
    "application is made online and answered within two working days.",
    "recycling-01": "At the end of its life the H5 is taken back free of charge. Aurora recycles "
    "over 90% of the battery's materials.",
    "account-01": "To transfer a battery to a new owner after selling a house, the old owner "
    "removes it from their account under Settings > Devices > Transfer.",
    "account-02": "Each account can invite up to five household members, who can view data but "
    "cannot change settings.",
    "noise-01": "The H5 is fan-cooled and produces under 30 dB at one metre, quieter than a "
    "refrigerator. The fan runs faster during fast charging.",
}
