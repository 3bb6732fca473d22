// Plans and reads a Paimon table with Java Paimon 0.9's table API, for tests/test_paimon_java_interop.py.
// Usage: PlanCount WAREHOUSE db.table COLUMN VALUE[,VALUE...]  ("-" = no filter);
// prints one "files=N rows=M" line per value.
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.options.Options;
import org.apache.paimon.predicate.Predicate;
import org.apache.paimon.predicate.PredicateBuilder;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.data.InternalRow;
import java.util.List;

public class PlanCount {
    public static void main(String[] a) throws Exception {
        Options o = new Options();
        o.set("warehouse", a[0]);
        Catalog c = CatalogFactory.createCatalog(CatalogContext.create(o));
        Table t = c.getTable(Identifier.fromString(a[1]));
        for (String v : a[3].split(",")) {
            a[3] = v;
            PredicateBuilder pb = new PredicateBuilder(t.rowType());
            int idx = t.rowType().getFieldNames().indexOf(a[2]);
            String ty = t.rowType().getTypeAt(idx).toString();
            Object lit = ty.startsWith("BIGINT") ? (Object) Long.valueOf(a[3].equals("-") ? "0" : a[3]) : ty.startsWith("INT") ? (Object) Integer.valueOf(a[3].equals("-") ? "0" : a[3]) : BinaryString.fromString(a[3]);
            Predicate p = pb.equal(idx, lit);
            ReadBuilder rb = a[3].equals("-") ? t.newReadBuilder() : t.newReadBuilder().withFilter(p);
            List<Split> splits = rb.newScan().plan().splits();
            int files = 0;
            for (Split s : splits) files += ((DataSplit) s).dataFiles().size();
            long rows = 0;
            try (RecordReader<InternalRow> r = rb.newRead().createReader(splits)) {
                RecordReader.RecordIterator<InternalRow> it;
                while ((it = r.readBatch()) != null) {
                    while (it.next() != null) rows++;
                    it.releaseBatch();
                }
            }
            System.out.println("files=" + files + " rows=" + rows);
        }
    }
}
